//! A streamed turn over a real provider (the OpenAI-compatible client against a local
//! server): the provider's deltas reach the stream as they arrive, and a connection
//! cut mid-stream and retried shows as a `Retry` item between the failed attempt's
//! deltas and the good attempt's.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::time::Duration;

use brute::stream::{TurnItem, TurnResult};
use brute::{Message, brute_agent, middleware::Retry, providers::OpenAi};
use providers_support::{Reply, Server};
use serde_json::json;

/// The event stream of a reply saying `words`, one content chunk per word.
fn sse(words: &[&str]) -> String {
    let mut text = String::new();
    for (i, word) in words.iter().enumerate() {
        let delta = if i == 0 {
            json!({"role": "assistant", "content": word})
        } else {
            json!({"content": word})
        };
        let chunk = json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
        });
        text.push_str(&format!("data: {chunk}\n\n"));
    }
    let end = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    });
    text.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
    text
}

fn deltas(items: &[TurnItem]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            TurnItem::ContentDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn provider_deltas_stream_and_a_retried_attempt_is_marked() {
    let whole = sse(&["Hello", ", ", "world"]);
    // The first attempt is cut after its first word's event.
    let cut = whole.find("\n\n").unwrap() + 2;
    let server = Server::start(vec![
        Reply::drop_after(&whole, cut, 16),
        Reply::stream_split(&whole, 16),
    ])
    .await;
    let model = OpenAi::compatible(format!("{}/v1", server.url()), "m")
        .api_key("sk-test")
        .stream(true)
        .timeout(Duration::from_secs(20));
    let agent = brute_agent! {
        use Retry { attempts: 2, base_delay: Duration::from_millis(1), jitter: false };
        run model;
    };
    let mut env = agent.env();
    env.messages.push(Message::user("Hi"));
    let mut stream = agent.stream(env);
    let mut items = Vec::new();
    while let Some(item) = stream.next_item().await {
        items.push(item);
    }
    let retry = items
        .iter()
        .position(|i| matches!(i, TurnItem::Retry { attempt: 1, .. }))
        .unwrap_or_else(|| panic!("no retry: {items:?}"));
    // The failed attempt's deltas come before the retry; a consumer drops them.
    assert_eq!(deltas(&items[..retry]), "Hello");
    assert_eq!(deltas(&items[retry..]), "Hello, world");
    let message = items
        .iter()
        .position(|i| matches!(i, TurnItem::Message { .. }))
        .unwrap();
    assert!(
        message > retry,
        "the reply comes after its deltas: {items:?}"
    );
    assert_eq!(
        items.last(),
        Some(&TurnItem::End {
            result: TurnResult::Completed {
                text: Some("Hello, world".into())
            }
        })
    );
}
