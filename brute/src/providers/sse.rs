//! An incremental parser for server-sent events, fed with whatever byte chunks the
//! network delivers (lines and UTF-8 sequences may be split anywhere).

use crate::error::ModelError;

/// Parses `text/event-stream` bodies incrementally.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes not yet consumed: at most one incomplete line.
    buffer: Vec<u8>,
    /// The `event:` field of the event being read.
    event: String,
    /// The `data:` lines of the event being read, joined by `\n`.
    data: String,
    /// Whether the event being read has a `data:` field.
    has_data: bool,
}

impl SseParser {
    /// Feeds the next chunk and calls `on_event(event, data)` for every event it completes.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        // Fast path: no incomplete line from the previous chunk, parse in place.
        let mut rest: &[u8] = chunk;
        let owned;
        if !self.buffer.is_empty() {
            self.buffer.extend_from_slice(chunk);
            owned = std::mem::take(&mut self.buffer);
            rest = &owned;
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let mut line = &rest[..end];
            if let [head @ .., b'\r'] = line {
                line = head;
            }
            self.line(line, &mut on_event)?;
            rest = &rest[end + 1..];
        }
        self.buffer.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the stream: dispatches a last event whose lines are complete but that
    /// lacked its closing blank line; a line cut short by the end is dropped (the
    /// decoders then see a stream that ended early).
    pub(crate) fn finish(
        &mut self,
        mut on_event: impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        self.buffer.clear();
        self.line(b"", &mut on_event)
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        if line.is_empty() {
            if self.has_data {
                let result = on_event(&self.event, &self.data);
                self.event.clear();
                self.data.clear();
                self.has_data = false;
                return result;
            }
            self.event.clear();
            return Ok(());
        }
        let line = std::str::from_utf8(line)
            .map_err(|e| ModelError::Malformed(format!("event stream line is not UTF-8: {e}")))?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            parser
                .feed(chunk, |e, d| {
                    events.push((e.to_string(), d.to_string()));
                    Ok(())
                })
                .expect("valid stream");
        }
        parser
            .finish(|e, d| {
                events.push((e.to_string(), d.to_string()));
                Ok(())
            })
            .expect("valid stream");
        events
    }

    #[test]
    fn events_split_anywhere_parse_the_same() {
        let stream = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata:[DONE]\ndata: {\"cut";
        let whole = parse(&[stream.as_bytes()]);
        assert_eq!(
            whole,
            [
                ("a".into(), "{\"x\":\"é\"}".into()),
                (String::new(), "one\ntwo".into()),
                (String::new(), "[DONE]".into())
            ]
        );
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
    fn invalid_utf8_is_malformed() {
        let mut parser = SseParser::default();
        let err = parser
            .feed(b"data: \xff\n\n", |_, _| Ok(()))
            .expect_err("not UTF-8");
        assert!(matches!(err, ModelError::Malformed(_)));
    }
}
