//! Reading a Server-Sent Events body: what [`RemoteAgent`](crate::RemoteAgent) does
//! with another server's turn.

/// The events of a whole SSE body: `(event name, data)`, data lines joined by `\n`.
/// Comments and keep-alives are skipped.
pub(crate) fn parse(body: &str) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let normalized = body.replace("\r\n", "\n");
    for block in normalized.split("\n\n") {
        let mut name = String::new();
        let mut data: Vec<&str> = Vec::new();
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event:") {
                name = value.trim_start().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        if !data.is_empty() {
            events.push((name, data.join("\n")));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn events_comments_and_multiline_data() {
        let body =
            ": keep-alive\n\nevent: message\ndata: {\"a\":1}\n\r\nevent: end\ndata: x\ndata: y\n\n";
        assert_eq!(
            parse(body),
            [
                ("message".to_owned(), "{\"a\":1}".to_owned()),
                ("end".to_owned(), "x\ny".to_owned())
            ]
        );
    }
}
