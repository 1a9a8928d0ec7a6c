//! Property tests of both stream decoders: arbitrary bytes cut anywhere never panic
//! and decode as they do uncut; a valid stream cut anywhere gives the same deltas and
//! the same message as uncut, and the message the deltas spell.

#![allow(clippy::unwrap_used)]

use crate::providers_faults;

use std::sync::{Arc, Mutex};

use brute::providers::{StreamDecode, WireFormat, anthropic, openai};
use brute::{Completion, Env, Error, Event, EventKind, Model, ModelError, brute_agent};
use proptest::prelude::*;
use providers_faults::Api;

/// `bytes` in pieces ending at the (sorted, deduplicated) `cuts`.
fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        out.push(bytes[start..cut].to_vec());
        start = cut;
    }
    out
}

/// Decodes `pieces` with format `F`'s decoder (events limited to `max_event_bytes`).
fn decode<F: WireFormat>(
    pieces: &[Vec<u8>],
    max_event_bytes: usize,
    env: &Env,
) -> Result<Completion, ModelError> {
    let mut decoder = F::stream_decoder("prop".into(), max_event_bytes);
    for piece in pieces {
        decoder.feed(piece, env)?;
    }
    decoder.finish(env)
}

/// What a decode came to, comparable across runs.
fn outcome(result: Result<Completion, ModelError>) -> String {
    match result {
        Ok(completion) => format!("{:?} {:?}", completion.message, completion.usage),
        Err(error) => format!("error: {error:?}"),
    }
}

fn both(pieces: &[Vec<u8>], limit: usize) -> [String; 2] {
    let env = Env::new();
    [
        outcome(decode::<openai::Codec>(pieces, limit, &env)),
        outcome(decode::<anthropic::Codec>(pieces, limit, &env)),
    ]
}

/// Bytes that look like an event stream often enough to reach the decoders' JSON
/// handling: fragments of real streams mixed with arbitrary bytes.
fn stream_like() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"event: content_block_delta\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"data: [DONE]\n\n".to_vec()),
        Just(
            br#"{"choices":[{"index":0,"delta":{"content":"h\u00e9"},"finish_reason":null}]}"#
                .to_vec()
        ),
        Just(
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#
                .to_vec()
        ),
        Just(br#"{"type":"message_stop"}"#.to_vec()),
        Just("é".as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..24),
    ];
    proptest::collection::vec(fragment, 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_cut_anywhere_decode_as_uncut(
        bytes in prop_oneof![proptest::collection::vec(any::<u8>(), 0..600), stream_like()],
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        limit in prop_oneof![Just(usize::MAX), 1usize..200],
    ) {
        let whole = both(std::slice::from_ref(&bytes), limit);
        let cut = both(&pieces(&bytes, &cuts), limit);
        prop_assert_eq!(&cut, &whole);
        let singles: Vec<Vec<u8>> = bytes.iter().map(|b| vec![*b]).collect();
        prop_assert_eq!(&both(&singles, limit), &whole);
    }
}

/// A model that decodes a stream handed to it in pieces, so that the deltas reach the
/// agent's event handlers.
struct Pieces {
    api: Api,
    pieces: Vec<Vec<u8>>,
}

impl Model for Pieces {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        let limit = brute::providers::DEFAULT_MAX_EVENT_BYTES;
        Ok(match self.api {
            Api::OpenAi => decode::<openai::Codec>(&self.pieces, limit, env)?,
            Api::Anthropic => decode::<anthropic::Codec>(&self.pieces, limit, env)?,
        })
    }
}

/// The deltas emitted and the message assembled from `pieces`.
fn run(api: Api, pieces: Vec<Vec<u8>>) -> (Vec<String>, String) {
    let model = Pieces { api, pieces };
    let mut agent = brute_agent! { run model; };
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    agent.on(EventKind::ContentDelta, move |_env, event| {
        if let Event::ContentDelta(text) = event {
            log.lock().unwrap().push(text.to_string());
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = runtime.block_on(agent.start("go")).unwrap();
    let message = format!("{:?}", outcome.env.messages.last().unwrap());
    let deltas = deltas.lock().unwrap().clone();
    (deltas, message)
}

fn api() -> impl Strategy<Value = Api> {
    prop_oneof![Just(Api::OpenAi), Just(Api::Anthropic)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn valid_streams_cut_anywhere_give_the_same_deltas_and_message(
        api in api(),
        deltas in proptest::collection::vec("[a-zé\"\\\\\n ✓{}:]{1,8}", 1..20),
        calls in proptest::collection::vec(("[a-z]{1,6}", "[a-zé\"{}, ]{0,12}"), 0..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let text = api.deltas_stream(&deltas);
        let (whole_deltas, whole_message) = run(api, vec![text.clone().into_bytes()]);
        prop_assert_eq!(&whole_deltas, &deltas);
        let spelled = format!("{:?}", deltas.concat());
        prop_assert!(whole_message.contains(&spelled), "{} lacks {}", whole_message, spelled);
        let (cut_deltas, cut_message) = run(api, pieces(text.as_bytes(), &cuts));
        prop_assert_eq!(cut_deltas, whole_deltas);
        prop_assert_eq!(cut_message, whole_message);

        // Tool calls, their arguments in halves: the same calls however cut.
        let calls: Vec<(String, String, String)> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| (format!("id{i}"), name, args))
            .collect();
        let text = api.calls_stream(&calls);
        let (_, whole) = run(api, vec![text.clone().into_bytes()]);
        let (_, cut) = run(api, pieces(text.as_bytes(), &cuts));
        prop_assert_eq!(cut, whole);
    }
}
