//! The harness offline on a `Replay` of recorded responses, and on a provider made by
//! `from_spec`: an OpenAI-compatible server of this test on 127.0.0.1.
#![allow(clippy::unwrap_used)]

use brute::providers::{Replay, from_spec};
use brute::{Model, brute_agent};
use brute_eval::{Case, Contains, Dataset, Eval, Progress};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

fn capitals() -> Dataset {
    Dataset::new(
        "capitals",
        [
            Case::new("fr", "The capital of France?").expect("Paris"),
            Case::new("jp", "The capital of Japan?").expect("Tokyo"),
            Case::new("au", "The capital of Australia?").expect("Canberra"),
        ],
    )
}

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    })
}

#[tokio::test]
async fn a_replay_answers_the_cases_in_order_at_concurrency_one() {
    let tape: String = ["Paris.", "Tokyo.", "Sydney."]
        .iter()
        .map(|text| format!("{}\n", completion(text)))
        .collect();
    let agent = brute_agent! { run Replay::from_jsonl("tape.jsonl", &tape).unwrap(); };
    let report = Eval::new(capitals())
        .concurrency(1)
        .progress(Progress::Off)
        .scorer(Contains::default())
        .run_agent(&agent)
        .await;
    let answers: Vec<(&str, bool, u64)> = report
        .cases
        .iter()
        .map(|c| (c.answer.as_str(), c.passed, c.tokens))
        .collect();
    assert_eq!(
        answers,
        [
            ("Paris.", true, 10),
            ("Tokyo.", true, 10),
            ("Sydney.", false, 10)
        ]
    );
}

/// An OpenAI-compatible server that answers each chat completion from its last user
/// message (so that concurrent cases get their own answers), until dropped.
async fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).await.unwrap();
                    let lower = line.to_ascii_lowercase();
                    if let Some(value) = lower.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap();
                    }
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).await.unwrap();
                let request: Value = serde_json::from_slice(&body).unwrap();
                let prompt = request["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "user")
                    .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                    .unwrap_or_default();
                let answer = match prompt {
                    p if p.contains("France") => "Paris",
                    p if p.contains("Japan") => "Tokyo",
                    _ => "Sydney",
                };
                let body = completion(answer).to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                reader
                    .get_mut()
                    .write_all(response.as_bytes())
                    .await
                    .unwrap();
            });
        }
    });
    format!("http://{address}/v1#local-model")
}

#[tokio::test]
async fn any_provider_from_a_spec_runs_the_cases_concurrently() {
    let model = from_spec(&server().await).unwrap();
    assert_eq!(model.name(), "local-model");
    let agent = brute_agent! { run model; };
    let report = Eval::new(capitals())
        .concurrency(3)
        .progress(Progress::Off)
        .label("local-model")
        .scorer(Contains::default())
        .run_agent(&agent)
        .await;
    let passed: Vec<(&str, bool)> = report
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.passed))
        .collect();
    assert_eq!(passed, [("fr", true), ("jp", true), ("au", false)]);
    assert!(
        report.table().starts_with("local-model on capitals\n"),
        "{}",
        report.table()
    );
}
