//! A model configured with an empty API key (`.api_key("")`, as a config file with the
//! key left blank gives) has no secret to hide: the server's error text reaches the
//! caller whole, not with `[redacted]` put between every character.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::time::Duration;

use brute::brute_agent;
use brute::providers::OpenAi;
use providers_support::{Reply, Server};

#[test]
fn an_empty_api_key_leaves_the_servers_error_text_whole() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let body = r#"{"error": {"message": "model xyz does not exist", "type": "invalid_request_error"}}"#;
            let server = Server::start(vec![Reply::status(400, &[], body)]).await;
            let model = OpenAi::compatible(format!("{}/v1", server.url()), "xyz")
                .api_key("")
                .stream(false)
                .timeout(Duration::from_secs(20));
            let agent = brute_agent! { run model; };
            let error = agent.start("Go.").await.unwrap_err();
            let text = error.to_string();
            assert!(text.contains("model xyz does not exist"), "{text}");
            assert!(!text.contains("[redacted]"), "{text}");
        });
}
