//! The YAML front matter of a `SKILL.md`: the subset of YAML that skill files use,
//! read without a YAML library (none is in brute's tree).
//!
//! Read: `key: value` lines at the top level, whose value is a plain scalar (which may
//! go on over more-indented lines), a single- or double-quoted string (which may span
//! lines), a literal (`|`) or folded (`>`) block with its chomping indicator (`-`,
//! `+`), a flow list (`[a, b]`), or, on the lines below an empty value, a block list
//! (`- item`) or a map of `key: scalar` lines (`metadata:`). Comments (`# ..`) and
//! blank lines are skipped. Anything else (anchors, tags, nested maps deeper than one
//! level) is an error naming its line, never a guess.

use std::fmt;

/// A value of the front matter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// A key with no value (`key:` and nothing indented below it).
    Null,
    /// A string (plain, quoted or a block).
    Scalar(String),
    /// A list (`[a, b]` or `- a` lines).
    List(Vec<String>),
    /// A map of scalars (`metadata:` with `key: value` lines below it).
    Map(Vec<(String, String)>),
}

/// One top-level entry: its key, value and the line (1-based, in the file) of its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) value: Value,
    pub(crate) line: usize,
}

/// Why front matter could not be read: the line (1-based, in the file) and what is
/// wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn malformed(line: usize, message: impl Into<String>) -> Malformed {
    Malformed {
        line,
        message: message.into(),
    }
}

/// The front matter's entries and the body after it (from the line after the closing
/// `---`, leading blank lines dropped).
pub(crate) fn split(text: &str) -> Result<(Vec<Entry>, &str), Malformed> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(malformed(
            1,
            "a SKILL.md starts with a line `---` that opens its front matter (`name:` and `description:`)",
        ));
    }
    let mut offset = first.len();
    let mut matter = Vec::new();
    let mut closed = None;
    for line in lines {
        let start = offset;
        offset += line.len();
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end() == "---" || bare.trim_end() == "..." {
            closed = Some(offset);
            break;
        }
        matter.push((start, bare));
    }
    let Some(body_start) = closed else {
        return Err(malformed(
            1,
            "the front matter opened on line 1 is never closed by a line `---`",
        ));
    };
    let lines: Vec<&str> = matter.iter().map(|(_, l)| *l).collect();
    let entries = parse(&lines)?;
    let body = text[body_start..].trim_start_matches(['\n', '\r']);
    Ok((entries, body))
}

/// The indentation of `line` in spaces; a tab in it is an error (YAML forbids them).
fn indent(line: &str, number: usize) -> Result<usize, Malformed> {
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    if line[..width].contains('\t') {
        return Err(malformed(
            number,
            "a tab in the indentation (YAML indents with spaces)",
        ));
    }
    Ok(width)
}

/// Whether a line holds nothing: blank, or only a comment.
fn is_blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Parses the lines between the `---` (line 1 of the file is the opening `---`, so
/// `lines[i]` is on line `i + 2`).
fn parse(lines: &[&str]) -> Result<Vec<Entry>, Malformed> {
    let number = |i: usize| i + 2;
    let mut entries: Vec<Entry> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_blank(line) {
            i += 1;
            continue;
        }
        if indent(line, number(i))? > 0 {
            return Err(malformed(
                number(i),
                "an indented line where a `key: value` line was expected",
            ));
        }
        let (key, rest) = key_value(line, number(i))?;
        if entries.iter().any(|e| e.key == key) {
            return Err(malformed(number(i), format!("`{key}` is given twice")));
        }
        let line_of_key = number(i);
        // The lines indented below the key belong to its value.
        let mut end = i + 1;
        while end < lines.len() && (is_blank(lines[end]) || indent(lines[end], number(end))? > 0) {
            end += 1;
        }
        let below = &lines[i + 1..end];
        let value = value(rest, below, i + 1, &number)?;
        entries.push(Entry {
            key,
            value,
            line: line_of_key,
        });
        i = end;
    }
    Ok(entries)
}

/// Splits `key: rest` (the key may be quoted).
fn key_value(line: &str, number: usize) -> Result<(String, &str), Malformed> {
    let trimmed = line.trim_start();
    let (key, rest) = if let Some(quote @ ('"' | '\'')) = trimmed.chars().next() {
        let close = trimmed[1..]
            .find(quote)
            .ok_or_else(|| malformed(number, "a quoted key is never closed"))?;
        (trimmed[1..=close].to_string(), &trimmed[close + 2..])
    } else {
        let colon = find_colon(trimmed).ok_or_else(|| {
            malformed(
                number,
                format!(
                    "expected `key: value`, found `{}`",
                    crate::tools::quoted(trimmed)
                ),
            )
        })?;
        (trimmed[..colon].trim_end().to_string(), &trimmed[colon..])
    };
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| malformed(number, format!("expected `:` after the key `{key}`")))?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return Err(malformed(
            number,
            format!("expected a space after `{key}:`"),
        ));
    }
    if key.is_empty() {
        return Err(malformed(number, "a `:` with no key before it"));
    }
    Ok((key, rest.trim()))
}

/// The position of the `:` that ends a plain key: followed by a space or the end.
fn find_colon(text: &str) -> Option<usize> {
    text.char_indices()
        .find(|&(i, c)| {
            c == ':'
                && text[i + 1..]
                    .chars()
                    .next()
                    .is_none_or(|n| n == ' ' || n == '\t')
        })
        .map(|(i, _)| i)
}

/// The value after `key:` (`rest`, trimmed) with the lines indented below it; `first`
/// is the index of the first of them.
fn value(
    rest: &str,
    below: &[&str],
    first: usize,
    number: &dyn Fn(usize) -> usize,
) -> Result<Value, Malformed> {
    let here = number(first - 1);
    if rest.starts_with(['&', '*', '!']) {
        return Err(malformed(
            here,
            "anchors, aliases and tags are not read in a SKILL.md",
        ));
    }
    if let Some(header) = rest.strip_prefix(['|', '>']) {
        let literal = rest.starts_with('|');
        return block(literal, strip_comment(header).trim(), below, here).map(Value::Scalar);
    }
    if rest.starts_with('"') || rest.starts_with('\'') {
        let mut text = rest.to_string();
        for line in below {
            text.push('\n');
            text.push_str(line);
        }
        let (s, after) = quoted_scalar(&text, here)?;
        if !is_blank(after) {
            return Err(malformed(here, "text after the closing quote"));
        }
        return Ok(Value::Scalar(s));
    }
    if let Some(flow) = rest.strip_prefix('[') {
        let inner = strip_comment(flow).trim_end();
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| malformed(here, "a list `[..` is not closed on its line"))?;
        return Ok(Value::List(
            inner
                .split(',')
                .map(|s| unquote(s.trim()))
                .filter(|s| !s.is_empty())
                .collect(),
        ));
    }
    if rest.starts_with('{') {
        return Err(malformed(
            here,
            "a map `{..}` on one line is not read: write one `key: value` per line below the key",
        ));
    }
    let rest = strip_comment(rest).trim_end();
    if !rest.is_empty() {
        // A plain scalar; more-indented lines below go on with it, joined by spaces.
        let mut s = rest.to_string();
        for line in below.iter().filter(|l| !is_blank(l)) {
            s.push(' ');
            s.push_str(strip_comment(line.trim()).trim_end());
        }
        return Ok(Value::Scalar(s));
    }
    // An empty value: a list or a map below it, or nothing.
    let items: Vec<(usize, &str)> = below
        .iter()
        .enumerate()
        .filter(|(_, l)| !is_blank(l))
        .map(|(k, l)| (number(first + k), *l))
        .collect();
    if items.is_empty() {
        return Ok(Value::Null);
    }
    let depth = indent(items[0].1, items[0].0)?;
    if items[0].1.trim_start().starts_with("- ") || items[0].1.trim() == "-" {
        let mut list = Vec::new();
        for (n, line) in items {
            let item = line
                .trim_start()
                .strip_prefix('-')
                .filter(|_| indent(line, n).is_ok_and(|d| d == depth))
                .ok_or_else(|| malformed(n, "expected a list item `- value`"))?;
            list.push(scalar(item.trim(), n)?);
        }
        return Ok(Value::List(list));
    }
    let mut map = Vec::new();
    for (n, line) in items {
        if indent(line, n)? != depth {
            return Err(malformed(
                n,
                "a map nested deeper than one level is not read in a SKILL.md",
            ));
        }
        let (key, rest) = key_value(line, n)?;
        if map.iter().any(|(k, _)| *k == key) {
            return Err(malformed(n, format!("`{key}` is given twice")));
        }
        if rest.is_empty() || rest.starts_with(['|', '>', '[', '{', '&', '*', '!']) {
            return Err(malformed(
                n,
                format!("`{key}` takes a value on its line (a string)"),
            ));
        }
        map.push((key, scalar(rest, n)?));
    }
    Ok(Value::Map(map))
}

/// A scalar on one line: quoted, or plain without its comment.
fn scalar(text: &str, number: usize) -> Result<String, Malformed> {
    if text.starts_with(['"', '\'']) {
        let (s, after) = quoted_scalar(text, number)?;
        if !is_blank(after) {
            return Err(malformed(number, "text after the closing quote"));
        }
        return Ok(s);
    }
    Ok(strip_comment(text).trim_end().to_string())
}

/// A plain list item of a flow list, with its quotes taken off.
fn unquote(text: &str) -> String {
    quoted_scalar(text, 0).map_or_else(|_| text.to_string(), |(s, _)| s)
}

/// `text` without a trailing ` # comment`.
fn strip_comment(text: &str) -> &str {
    match text.find(" #") {
        Some(at) => &text[..at],
        None if text.starts_with('#') => "",
        None => text,
    }
}

/// A quoted string at the start of `text` and what follows it. Line breaks inside
/// fold as YAML folds them: one break is a space, an empty line a newline.
fn quoted_scalar(text: &str, number: usize) -> Result<(String, &str), Malformed> {
    let quote = text.chars().next().unwrap_or('"');
    let mut out = String::new();
    let mut chars = text[1..].char_indices();
    let mut pending_break = 0usize;
    while let Some((i, c)) = chars.next() {
        if c == '\n' {
            // Fold: trailing spaces of the line and leading spaces of the next go.
            while out.ends_with(' ') {
                out.pop();
            }
            pending_break += 1;
            continue;
        }
        if pending_break > 0 {
            if c == ' ' || c == '\t' {
                continue;
            }
            out.push_str(&if pending_break == 1 {
                " ".to_string()
            } else {
                "\n".repeat(pending_break - 1)
            });
            pending_break = 0;
        }
        if c == quote {
            if quote == '\'' && text[1 + i + 1..].starts_with('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok((out, &text[1 + i + 1..]));
        }
        if c == '\\' && quote == '"' {
            let (_, e) = chars
                .next()
                .ok_or_else(|| malformed(number, "a `\\` at the end of a quoted string"))?;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' | '\\' | '/' | ' ' => out.push(e),
                'u' | 'x' | 'U' => {
                    let len = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = chars.by_ref().take(len).map(|(_, h)| h).collect();
                    let ch = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .filter(|_| hex.len() == len)
                        .ok_or_else(|| {
                            malformed(number, format!("`\\{e}{hex}` is not a character"))
                        })?;
                    out.push(ch);
                }
                other => {
                    return Err(malformed(
                        number,
                        format!("unknown escape `\\{other}` in a quoted string"),
                    ));
                }
            }
            continue;
        }
        out.push(c);
    }
    Err(malformed(
        number,
        format!("a string opened with {quote} is never closed"),
    ))
}

/// A `|` or `>` block: the lines below, their common indentation removed, kept line by
/// line (literal) or joined by spaces (folded; an empty line is a newline), then
/// chomped: one final newline (default), none (`-`) or all (`+`).
fn block(literal: bool, header: &str, below: &[&str], number: usize) -> Result<String, Malformed> {
    let (strip, keep) = match header {
        "" => (false, false),
        "-" => (true, false),
        "+" => (false, true),
        other => {
            return Err(malformed(
                number,
                format!(
                    "the block indicator `{other}` is not read (use `|`, `|-`, `|+`, `>`, `>-` or `>+`)"
                ),
            ));
        }
    };
    let depth = below
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = below
        .iter()
        .map(|l| if l.trim().is_empty() { "" } else { &l[depth..] })
        .collect();
    let mut out = String::new();
    for (k, line) in lines.iter().enumerate() {
        if literal {
            out.push_str(line);
            out.push('\n');
        } else if line.is_empty() {
            out.push('\n');
        } else {
            let previous = k.checked_sub(1).map(|p| lines[p]);
            if previous
                .is_some_and(|p| !p.is_empty() && !p.starts_with(' ') && !line.starts_with(' '))
            {
                out.push(' ');
            } else if previous.is_some_and(|p| !p.is_empty()) {
                out.push('\n');
            }
            out.push_str(line);
        }
    }
    if !literal && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !keep {
        while out.ends_with('\n') {
            out.pop();
        }
        if !strip && !out.is_empty() {
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn get(text: &str, key: &str) -> Value {
        let (entries, _) = split(text).unwrap();
        entries.into_iter().find(|e| e.key == key).unwrap().value
    }

    fn scalar(s: &str) -> Value {
        Value::Scalar(s.to_string())
    }

    #[test]
    fn scalars_of_every_style_read_as_yaml_reads_them() {
        let text = "\u{feff}---\r\n\
            plain: a plain: value # a comment\r\n\
            cont: first\r\n  second\r\n\
            double: \"tab\\there \\\"q\\\" \\u00e9\"\r\n\
            single: 'it''s # not a comment'\r\n\
            folded: >\r\n  one\r\n  two\r\n\r\n  three\r\n\
            literal: |-\r\n  line 1\r\n  line 2\r\n\
            keep: |+\r\n  x\r\n\r\n\
            wrapped: \"a\r\n  b\r\n\r\n  c\"\r\n\
            ---\r\n\r\nbody\r\n";
        assert_eq!(get(text, "plain"), scalar("a plain: value"));
        assert_eq!(get(text, "cont"), scalar("first second"));
        assert_eq!(get(text, "double"), scalar("tab\there \"q\" é"));
        assert_eq!(get(text, "single"), scalar("it's # not a comment"));
        assert_eq!(get(text, "folded"), scalar("one two\nthree\n"));
        assert_eq!(get(text, "literal"), scalar("line 1\nline 2"));
        assert_eq!(get(text, "keep"), scalar("x\n\n"));
        assert_eq!(get(text, "wrapped"), scalar("a b\nc"));
        assert_eq!(split(text).unwrap().1, "body\r\n");
    }

    #[test]
    fn lists_and_a_map_of_one_level_are_read() {
        let text = "---\nflow: [Read, 'Grep', \"Bash(git:*)\"]\nblock:\n  - a\n  - \"b c\"\n\
                    metadata:\n  author: me # who\n  version: \"1.0\"\nempty:\n---\n";
        assert_eq!(
            get(text, "flow"),
            Value::List(vec!["Read".into(), "Grep".into(), "Bash(git:*)".into()])
        );
        assert_eq!(
            get(text, "block"),
            Value::List(vec!["a".into(), "b c".into()])
        );
        assert_eq!(
            get(text, "metadata"),
            Value::Map(vec![
                ("author".into(), "me".into()),
                ("version".into(), "1.0".into())
            ])
        );
        assert_eq!(get(text, "empty"), Value::Null);
    }

    #[test]
    fn what_is_not_read_is_an_error_at_its_line() {
        let line = |text: &str| split(text).unwrap_err().line;
        assert_eq!(line("---\na: 1\nb: &x 2\n---\n"), 3);
        assert_eq!(line("---\na: 1\n\tb: 2\n---\n"), 3);
        assert_eq!(line("---\na: {b: 1}\n---\n"), 2);
        assert_eq!(line("---\na: \"\\q\"\n---\n"), 2);
        assert_eq!(line("---\na: |x\n  b\n---\n"), 2);
        assert_eq!(line("---\nlist:\n  - a\n  b: c\n---\n"), 4);
        assert_eq!(line("---\na: [b, c\n---\n"), 2);
        assert_eq!(line("---\na: 'b' c\n---\n"), 2);
        assert_eq!(line("---\n: b\n---\n"), 2);
    }
}
