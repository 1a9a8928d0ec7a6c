//! Instructions per streamed turn with and without the PII guard, under callgrind, so
//! that the machine's load cannot disturb the figure: a `SystemPrompt` stack whose
//! model streams a 120-word reply in 4-byte deltas (a token or so each, as providers
//! send them), the turn drained as a `TurnStream`; `pii` adds
//! `Guardrail { guard: PiiGuard }` with every built-in detector redacting, and finds
//! nothing (the common case: every delta released as it comes); `pii-found` streams
//! the same reply with an email address, a card number and a URL in it.
//!
//! ```text
//! cargo bench --bench guard_stream      # the three versions under callgrind, one table
//! ```
//!
//! Without `--bench` (as `cargo test --benches` runs it) it checks what each version
//! streams and runs a few turns of each.

#[path = "common/callgrind.rs"]
mod harness;

use brute::middleware::guard::{Action, Pii, PiiGuard};
use brute::middleware::{Guardrail, SystemPrompt};
use brute::stream::TurnItem;
use brute::{Agent, Env, Error, Event, Handler, Message, brute_agent};
use harness::{count_turns, load};

/// Turns counted per callgrind run.
const TURNS: u32 = 20_000;

const CLEAN: &str = "The report covers the third quarter. Revenue grew in every region, led by \
    the northern stores, while costs stayed flat after the move to the new warehouse. \
    The team recommends keeping the current prices until the spring, hiring two more \
    people for the support desk, and reviewing the delivery contracts in March. Most \
    customers rated the new service well, and complaints fell by a fifth compared with \
    the same months of last year. The next report will follow the same outline, with a \
    short section on the online shop and the results of the survey sent in October, \
    once every answer has been counted and checked by the analysts in the main office.";

const FOUND: &str = "The report covers the third quarter. Revenue grew in every region, led by \
    the northern stores, while costs stayed flat after the move to the new warehouse. \
    Questions go to ann.lee@example.com and the refund went to card 4111 1111 1111 1111 \
    as agreed. The team recommends keeping the current prices until the spring, hiring \
    two more people for the support desk, and reviewing the delivery contracts in March. \
    Most customers rated the new service well; the survey is at https://example.com/q3 \
    and complaints fell by a fifth compared with the same months of last year, once \
    every answer has been counted and checked by the analysts in the main office.";

/// The reply's deltas: 4 bytes each (on character boundaries).
fn deltas(text: &'static str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + 4).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// A model that streams `text` in deltas and answers it whole.
fn model(
    text: &'static str,
) -> impl Fn(&Env) -> std::future::Ready<Result<Message, Error>> + Send + Sync {
    let pieces = deltas(text);
    move |env: &Env| {
        for piece in &pieces {
            env.emit(Event::ContentDelta(piece));
        }
        std::future::ready(Ok(Message::assistant(text)))
    }
}

fn pii() -> PiiGuard {
    PiiGuard::new()
        .detect(Pii::Email, Action::Redact)
        .detect(Pii::Card, Action::Redact)
        .detect(Pii::Ip, Action::Redact)
        .detect(Pii::Url, Action::Redact)
        .detect(Pii::Phone, Action::Redact)
}

/// One streamed turn: its streamed text.
async fn streamed<S: Handler<Env>>(agent: &Agent<S>) -> String {
    let mut env = agent.env();
    env.messages.push(Message::user("Summarise the report."));
    let mut stream = agent.stream(env);
    let mut text = String::new();
    while let Some(item) = stream.next_item().await {
        if let TurnItem::ContentDelta { text: delta } = item {
            text.push_str(&delta);
        }
    }
    text
}

/// Instructions per turn of `version`, under callgrind.
fn callgrind(version: &str) -> Option<f64> {
    harness::instructions_per_turn(version, TURNS)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let plain = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        run model(CLEAN);
    };
    let guarded = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        use Guardrail { guard: pii() };
        run model(CLEAN);
    };
    let found = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        use Guardrail { guard: pii() };
        run model(FOUND);
    };

    // What each version streams.
    assert_eq!(runtime.block_on(streamed(&plain)), CLEAN);
    assert_eq!(runtime.block_on(streamed(&guarded)), CLEAN);
    let redacted = runtime.block_on(streamed(&found));
    assert!(redacted.contains("[REDACTED_EMAIL]") && redacted.contains("[REDACTED_CARD]"));
    assert!(redacted.contains("[REDACTED_URL]") && !redacted.contains("4111"));

    match args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        Some("plain") => count_turns(&runtime, TURNS, || streamed(&plain)),
        Some("pii") => count_turns(&runtime, TURNS, || streamed(&guarded)),
        Some("pii-found") => count_turns(&runtime, TURNS, || streamed(&found)),
        Some(other) => {
            eprintln!("unknown version `{other}`: plain, pii or pii-found");
            std::process::exit(2);
        }
        None if args.iter().any(|a| a == "--bench") => {
            println!("load average at start: {}", load());
            let rows: Vec<(&str, Option<f64>)> = ["plain", "pii", "pii-found"]
                .into_iter()
                .map(|v| (v, callgrind(v)))
                .collect();
            println!("load average at end: {}\n", load());
            let Some(base) = rows[0].1 else {
                println!("valgrind could not run: no instruction counts");
                return;
            };
            println!("| streamed turn | instructions per turn | × plain |");
            println!("|---|---|---|");
            for (version, count) in rows {
                if let Some(count) = count {
                    println!("| {version} | {count:.0} | {:.3} |", count / base);
                }
            }
        }
        None => {
            count_turns(&runtime, 100, || streamed(&plain));
            count_turns(&runtime, 100, || streamed(&guarded));
            count_turns(&runtime, 100, || streamed(&found));
        }
    }
}
