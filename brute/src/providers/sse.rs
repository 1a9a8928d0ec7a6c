//! An incremental parser for server-sent events, fed with whatever byte chunks the
//! network delivers (lines and UTF-8 sequences may be split anywhere).
//!
//! It is linear in its input: every byte is scanned for a line end once, and copied at
//! most once (into the pending line, when a line spans chunks); complete lines inside a
//! chunk are parsed in place. An event (its lines together) larger than the limit is
//! refused with [`ModelError::TooLarge`] as soon as it passes the limit, so a line that
//! never ends holds at most the limit in memory.

use crate::error::ModelError;

/// The largest event an event stream may send by default: 16 MiB, beyond any delta a
/// model writes (a whole 128k-token reply is about 1 MiB of text, twice that escaped),
/// small enough that a runaway line is refused long before it hurts.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Parses `text/event-stream` bodies incrementally. Only `data:` fields matter to the
/// providers (the event's type is in its JSON), so `event:`, `id:` and comments are
/// read and dropped.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Names the stream in errors (`openai: POST <url> (model m)`).
    place: String,
    /// The start of a line whose end has not arrived yet.
    pending: Vec<u8>,
    /// The `data:` lines of the event being read, joined by `\n`.
    data: String,
    /// Whether the event being read has a `data:` field.
    has_data: bool,
    /// Bytes of the complete lines of the event being read.
    event_bytes: usize,
    /// The most bytes one event may take.
    max_event_bytes: usize,
    /// How many lines had bytes that are not UTF-8 (replaced by U+FFFD).
    invalid_utf8: usize,
}

impl SseParser {
    /// A parser for the stream at `place`, refusing events over `max_event_bytes`.
    pub(crate) fn new(place: String, max_event_bytes: usize) -> Self {
        SseParser {
            place,
            pending: Vec::new(),
            data: String::new(),
            has_data: false,
            event_bytes: 0,
            max_event_bytes,
            invalid_utf8: 0,
        }
    }

    /// Where the stream comes from, for the decoders' own errors.
    pub(crate) fn place(&self) -> &str {
        &self.place
    }

    /// Feeds the next chunk and calls `on_event(place, data)` for every event it completes.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let head = &rest[..end];
            self.admit(head.len())?;
            if self.pending.is_empty() {
                self.line(head, &mut on_event)?;
            } else {
                // The line began in an earlier chunk: complete it, parse it, and keep
                // the buffer's allocation for the next one.
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(head);
                let result = self.line(&line, &mut on_event);
                line.clear();
                self.pending = line;
                result?;
            }
            rest = &rest[end + 1..];
        }
        self.admit(rest.len())?;
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the stream: dispatches a last event whose lines are complete but that
    /// lacked its closing blank line; a line cut short by the end is dropped (the
    /// decoders then see a stream that ended early).
    pub(crate) fn finish(
        &mut self,
        mut on_event: impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        self.pending.clear();
        self.line(b"", &mut on_event)
    }

    /// Refuses `more` bytes of the current line when the event would pass the limit.
    fn admit(&self, more: usize) -> Result<(), ModelError> {
        let size = self.event_bytes + self.pending.len() + more;
        if size > self.max_event_bytes {
            return Err(ModelError::TooLarge {
                limit: self.max_event_bytes,
                message: format!(
                    "{}: an event of the stream passed the event size limit",
                    self.place
                ),
            });
        }
        Ok(())
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        if line.is_empty() || line == b"\r" {
            self.event_bytes = 0;
            if !self.has_data {
                return Ok(());
            }
            self.has_data = false;
            let result = on_event(&self.place, &self.data);
            self.data.clear();
            return result;
        }
        self.event_bytes += line.len();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(value) = line.strip_prefix(b"data") else {
            // `event:`, `id:`, `retry:`, comments and unknown fields.
            return Ok(());
        };
        let value = match value {
            [] => &[][..],
            [b':', b' ', value @ ..] | [b':', value @ ..] => value,
            // A field whose name only starts with `data`.
            _ => return Ok(()),
        };
        let value = match std::str::from_utf8(value) {
            Ok(value) => std::borrow::Cow::Borrowed(value),
            Err(e) => {
                // One bad byte is no reason to lose the reply: it becomes U+FFFD.
                self.invalid_utf8 += 1;
                // Once per stream: a stream of bad bytes does not flood the log.
                if self.invalid_utf8 == 1 {
                    tracing::warn!(
                    brute.provider.place = %self.place,
                    error.message = %e,
                        "an event stream line is not UTF-8; its invalid bytes were replaced"
                    );
                }
                String::from_utf8_lossy(value)
            }
        };
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(&value);
        self.has_data = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::new("test".into(), DEFAULT_MAX_EVENT_BYTES);
        let mut events = Vec::new();
        for chunk in chunks {
            parser
                .feed(chunk, |_, d| {
                    events.push(d.to_string());
                    Ok(())
                })
                .expect("valid stream");
        }
        parser
            .finish(|_, d| {
                events.push(d.to_string());
                Ok(())
            })
            .expect("valid stream");
        events
    }

    #[test]
    fn events_split_anywhere_parse_the_same() {
        let stream = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata:[DONE]\ndatum: no\ndata\ndata: {\"cut";
        let whole = parse(&[stream.as_bytes()]);
        assert_eq!(whole, ["{\"x\":\"é\"}", "one\ntwo", "[DONE]\n"]);
        let bytes = stream.as_bytes();
        for split in 0..bytes.len() {
            assert_eq!(
                parse(&[&bytes[..split], &bytes[split..]]),
                whole,
                "split at {split}"
            );
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse(&singles), whole);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_counted() {
        let mut parser = SseParser::new("openai: POST u".into(), 100);
        let mut events = Vec::new();
        parser
            .feed(b"data: a\xffb\n\ndata: \xc3\n\n", |_, d| {
                events.push(d.to_owned());
                Ok(())
            })
            .expect("replaced, not refused");
        assert_eq!(events, ["a\u{fffd}b", "\u{fffd}"]);
        assert_eq!(parser.invalid_utf8, 2);
    }

    #[test]
    fn a_line_without_end_is_refused_at_the_limit_with_bounded_memory() {
        let limit = 64 * 1024;
        let mut parser = SseParser::new("s".into(), limit);
        let piece = [b'x'; 1000];
        let mut fed = 0;
        let err = loop {
            match parser.feed(&piece, |_, _| Ok(())) {
                Ok(()) => fed += piece.len(),
                Err(err) => break err,
            }
            assert!(fed <= limit, "fed {fed} bytes past the limit");
        };
        assert_eq!(
            err,
            ModelError::TooLarge {
                limit,
                message: "s: an event of the stream passed the event size limit".into()
            }
        );
        assert!(
            parser.pending.capacity() <= 2 * limit,
            "buffer grew past the limit"
        );
    }

    #[test]
    fn the_limit_counts_the_lines_of_one_event_not_the_stream() {
        let mut parser = SseParser::new("s".into(), 20);
        let mut events = 0;
        // Many events of 16 bytes each: under the limit one by one.
        for _ in 0..100 {
            parser
                .feed(b"data: 0123456789\n\n", |_, _| {
                    events += 1;
                    Ok(())
                })
                .expect("small events");
        }
        assert_eq!(events, 100);
        // Two data lines of one event together pass it.
        let err = parser
            .feed(b"data: 0123456789\ndata: 0123456789\n\n", |_, _| Ok(()))
            .expect_err("too large");
        assert!(matches!(err, ModelError::TooLarge { limit: 20, .. }));
    }
}
