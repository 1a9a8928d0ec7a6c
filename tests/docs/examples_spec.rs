//! A model from one string (issue 14, item 2): a spec naming an OpenAI-compatible
//! server by its address reaches that server on 127.0.0.1, with the model name the
//! spec gave, and its reply comes back through an agent. Parsing and the choice of
//! keys are unit tests in `brute/src/providers/spec.rs`.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use brute::providers::{self, AnyModel, ModelSpec};
use brute::{Model, brute_agent};
use providers_support::{Reply, Server};

const ANSWER: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"served",
  "choices":[{"index":0,"message":{"role":"assistant","content":"from the server"},"finish_reason":"stop"}],
  "usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}"#;

#[tokio::test]
async fn a_compatible_spec_reaches_its_server_with_its_model_name() {
    let server = Server::start(vec![Reply::json(ANSWER)]).await;
    let spec = format!("{}/v1#served-model", server.url());
    assert_eq!(
        ModelSpec::parse(&spec).unwrap(),
        ModelSpec::Compatible {
            base_url: format!("{}/v1", server.url()),
            model: "served-model".into()
        }
    );
    let model = providers::from_spec(&spec).unwrap();
    assert!(matches!(model, AnyModel::OpenAi(_)));
    assert_eq!(model.name(), "served-model");

    let agent = brute_agent! { run model; };
    let outcome = agent.start("Hello").await.unwrap();
    assert_eq!(outcome.text(), Some("from the server"));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].json()["model"], "served-model");
    // Only `BRUTE_API_KEY` is sent to a server named by its address.
    assert_eq!(
        requests[0].header("authorization").is_some(),
        std::env::var("BRUTE_API_KEY").is_ok_and(|k| !k.trim().is_empty())
    );
}

#[tokio::test]
async fn a_streamed_spec_model_streams() {
    let chunk = |delta: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{delta}\"}},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let body = format!("{}{}data: [DONE]\n\n", chunk("stre"), chunk("amed"));
    let server = Server::start(vec![Reply::stream_split(&body, 7)]).await;
    let model = providers::from_spec(&format!("{}/v1#m", server.url()))
        .unwrap()
        .stream(true);
    let agent = brute_agent! { run model; };
    let outcome = agent.start("Hello").await.unwrap();
    assert_eq!(outcome.text(), Some("streamed"));
    assert_eq!(server.requests()[0].json()["stream"], true);
}

#[test]
fn an_unknown_provider_is_refused_with_the_spec_named() {
    let error = providers::from_spec("mistral:large")
        .unwrap_err()
        .to_string();
    assert!(error.contains("`mistral:large`"), "{error}");
    assert!(error.contains("openai:NAME"), "{error}");
}
