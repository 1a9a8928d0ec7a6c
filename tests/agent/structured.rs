//! Structured output: typed turns against a local server speaking each provider's wire
//! format (the request bodies checked: OpenAI's strict `response_format`, Anthropic's
//! forced tool), invalid answers sent back with the validation error a bounded number
//! of times, the typed error after that, and turns without a schema left untouched.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::time::Duration;

use brute::middleware::{Loop, SessionLog};
use brute::providers::{Anthropic, OpenAi, ScriptedModel};
use brute::structured::{OutputSchema, Structured, StructuredError, TypedAgent, schemars, serde};
use brute::{Message, brute_agent, model::ToolSpec};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// A city and how many people live there.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
struct City {
    /// The city's name.
    name: String,
    /// How many people live there.
    population: u32,
    /// The canton, when there is one.
    canton: Option<String>,
}

fn zurich() -> City {
    City {
        name: "Zürich".into(),
        population: 443037,
        canton: Some("ZH".into()),
    }
}

fn openai(server: &Server) -> OpenAi {
    OpenAi::compatible(format!("{}/v1", server.url()), "gpt-4.1")
        .api_key("sk-test")
        .timeout(Duration::from_secs(20))
}

fn anthropic(server: &Server) -> Anthropic {
    Anthropic::new("claude-sonnet-4-5")
        .base_url(server.url())
        .api_key("sk-ant-test")
        .timeout(Duration::from_secs(20))
        .prompt_caching(false)
}

fn openai_says(content: &str) -> Reply {
    Reply::json(
        &json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10}
        })
        .to_string(),
    )
}

fn anthropic_calls(name: &str, input: Value) -> Reply {
    Reply::json(
        &json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": input}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 50, "output_tokens": 10}
        })
        .to_string(),
    )
}

fn city_schema() -> Value {
    json!({
        "type": "object",
        "description": "A city and how many people live there.",
        "properties": {
            "name": {"type": "string", "description": "The city's name."},
            "population": {"type": "integer", "minimum": 0, "description": "How many people live there."},
            "canton": {"type": ["string", "null"], "description": "The canton, when there is one."}
        },
        "required": ["name", "population", "canton"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn openai_gets_a_strict_json_schema_and_an_invalid_answer_goes_back_with_its_error() {
    let server = Server::start(vec![
        openai_says(r#"{"name": "Zürich", "population": "many", "canton": "ZH"}"#),
        openai_says(r#"{"name": "Zürich", "population": 443037, "canton": "ZH"}"#),
    ])
    .await;
    let model = openai(&server);
    let agent = brute_agent! {
        use Structured { retries: 2 };
        run model;
    };
    let city = agent
        .start_typed::<City>("The largest city of Switzerland?")
        .await
        .unwrap();
    assert_eq!(city.value, zurich());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    assert_eq!(
        first["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "City", "schema": city_schema(), "strict": true}})
    );
    // The second call carries the invalid answer and what was wrong with it.
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[2]["role"], "user");
    let correction = messages[2]["content"].as_str().unwrap();
    assert!(
        correction.contains("at `population`: invalid type: string \"many\""),
        "{correction}"
    );
    assert_eq!(second["response_format"], first["response_format"]);
    assert_eq!(city.outcome.env.usage().input_tokens, 100);
}

#[tokio::test]
async fn anthropic_is_forced_to_call_the_answer_tool_which_becomes_the_text() {
    for stream in [false, true] {
        let input = json!({"name": "Zürich", "population": 443037, "canton": "ZH"});
        let reply = if stream {
            let events = [
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 50, "output_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "City", "input": {}}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 10}}),
                json!({"type": "message_stop"}),
            ];
            let text: String = events
                .iter()
                .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
                .collect();
            Reply::stream_split(&text, 19)
        } else {
            anthropic_calls("City", input.clone())
        };
        let server = Server::start(vec![reply]).await;
        let model = anthropic(&server).stream(stream);
        let agent = brute_agent! {
            use Structured;
            run model;
        };
        let city = agent
            .start_typed::<City>("The largest city of Switzerland?")
            .await
            .unwrap();
        assert_eq!(city.value, zurich(), "stream: {stream}");
        // The answer is the assistant's text, with no dangling tool call.
        let answer = city.outcome.message().unwrap();
        assert!(answer.tool_calls.is_empty());
        assert_eq!(
            serde_json::from_str::<Value>(&answer.content).unwrap(),
            input
        );

        let body = server.requests()[0].json();
        assert_eq!(
            body["tools"],
            json!([{
                "name": "City",
                "description": "Give your final answer by calling this tool: its input is the answer.",
                "input_schema": city_schema()
            }])
        );
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "City"}));
    }
}

#[tokio::test]
async fn anthropic_with_other_tools_must_call_some_tool_and_thinking_leaves_the_choice() {
    let search = ToolSpec::new(
        "search",
        "Search.",
        json!({"type": "object", "properties": {}}),
    );
    let server = Server::start(vec![
        anthropic_calls(
            "City",
            json!({"name": "Bern", "population": 134591, "canton": "BE"}),
        ),
        anthropic_calls(
            "City",
            json!({"name": "Bern", "population": 134591, "canton": "BE"}),
        ),
    ])
    .await;
    let model = anthropic(&server).param("tool_choice", json!({"type": "auto"}));
    let agent = brute_agent! { use Structured; run model.clone(); };
    let mut env = agent.env();
    env.tools.push(search.clone());
    env.messages.push(Message::user("The capital?"));
    let city = agent.turn_typed::<City>(env).await.unwrap();
    assert_eq!(city.value.name, "Bern");
    let body = server.requests()[0].json();
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "City"]);
    // The schema's choice replaces the one set with `param`, written once.
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(requests_text(&server, 0).matches("tool_choice").count(), 1);

    // Extended thinking cannot be combined with a forced tool: the model chooses.
    let thinking = model.thinking(1024);
    let agent = brute_agent! { use Structured; run thinking; };
    agent.start_typed::<City>("The capital?").await.unwrap();
    assert_eq!(
        server.requests()[1].json()["tool_choice"],
        json!({"type": "auto"})
    );
}

fn requests_text(server: &Server, index: usize) -> String {
    String::from_utf8(server.requests()[index].body.clone()).unwrap()
}

#[tokio::test]
async fn after_the_retries_the_turn_fails_with_a_typed_error_and_the_session_keeps_the_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let server = Server::start(vec![
        openai_says("Zürich, about 443k people."),
        openai_says(r#"{"name": "Zürich"}"#),
    ])
    .await;
    let model = openai(&server);
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Structured { retries: 1 };
        run model;
    };
    let error = agent
        .start_typed::<City>("Largest city?")
        .await
        .unwrap_err();
    assert_eq!(error.layer_name(), Some("Structured"));
    let Some(StructuredError::Invalid {
        schema,
        attempts,
        error: why,
        reply,
    }) = error.downcast_ref::<StructuredError>()
    else {
        panic!("{error}")
    };
    assert_eq!((schema.as_str(), *attempts), ("City", 2));
    assert!(why.contains("missing field `population`"), "{why}");
    assert_eq!(reply, r#"{"name": "Zürich"}"#);
    assert_eq!(server.requests().len(), 2);
    // Prompt, answer, correction, answer: all stored.
    let session = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Message> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[2].content.contains("is not JSON"),
        "{}",
        lines[2].content
    );
}

#[tokio::test]
async fn without_the_layer_an_invalid_answer_fails_at_once_and_a_valid_one_is_typed() {
    let agent = brute_agent! {
        run ScriptedModel::new([
            Message::assistant("```json\n{\"name\": \"Basel\", \"population\": 177595, \"canton\": null}\n```"),
            Message::assistant("{}"),
        ]);
    };
    let basel = agent.start_typed::<City>("Third city?").await.unwrap();
    assert_eq!(basel.value.canton, None);
    let error = agent.start_typed::<City>("Fourth?").await.unwrap_err();
    let Some(StructuredError::Invalid { attempts, .. }) = error.downcast_ref::<StructuredError>()
    else {
        panic!("{error}")
    };
    assert_eq!(*attempts, 1);
}

#[tokio::test]
async fn a_turn_that_ends_without_an_answer_is_a_no_answer_error() {
    let agent = brute_agent! {
        use Structured;
        use Loop::While { condition: |_env| false };
        run |env| {
            let _ = env;
            async { Ok(Message::tool_calls("", vec![brute::ToolCall::new("1", "x", json!({}))])) }
        };
    };
    let error = agent.start_typed::<City>("?").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<StructuredError>(),
            Some(StructuredError::NoAnswer { .. })
        ),
        "{error}"
    );
}

#[tokio::test]
async fn answers_that_are_not_objects_are_wrapped_on_the_wire() {
    let server = Server::start(vec![openai_says(r#"{"value": ["Zürich", "Genf"]}"#)]).await;
    let model = openai(&server);
    let agent = brute_agent! { use Structured; run model; };
    let cities = agent
        .start_typed::<Vec<String>>("Two cities?")
        .await
        .unwrap();
    assert_eq!(cities.value, ["Zürich", "Genf"]);
    let format = &server.requests()[0].json()["response_format"]["json_schema"];
    assert_eq!(format["name"], "Array_of_string");
    assert_eq!(
        format["schema"],
        json!({
            "type": "object",
            "properties": {"value": {"type": "array", "items": {"type": "string"}}},
            "required": ["value"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn turns_without_a_schema_pass_through_and_keep_their_own_response_format() {
    let server = Server::start(vec![
        openai_says("just text"),
        openai_says(r#"{"name": "Lugano", "population": 63000, "canton": "TI"}"#),
    ])
    .await;
    let model = openai(&server).param("response_format", json!({"type": "json_object"}));
    let agent = brute_agent! { use Structured; run model; };
    let outcome = agent.start("Hello").await.unwrap();
    assert_eq!(outcome.text(), Some("just text"));
    assert_eq!(
        server.requests()[0].json()["response_format"],
        json!({"type": "json_object"})
    );
    // A typed turn replaces it for its call, and writes the key once.
    let mut env = agent.env();
    env.messages.push(Message::user("A city in Ticino?"));
    env.extensions.insert(
        OutputSchema::of::<City>()
            .strict(false)
            .description("unused by OpenAI"),
    );
    let city = agent.turn_typed::<City>(env).await.unwrap();
    assert_eq!(city.value.name, "Lugano");
    let body = requests_text(&server, 1);
    assert_eq!(body.matches("response_format").count(), 1);
    let format = &server.requests()[1].json()["response_format"];
    assert_eq!(format["json_schema"]["strict"], json!(false));
    // Not strict: the schema as schemars wrote it (the optional canton not required).
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["name", "population"])
    );
}

#[tokio::test]
async fn a_check_beyond_the_shape_is_a_validation_error_too() {
    let agent = brute_agent! {
        use Structured { retries: 3 };
        run ScriptedModel::new([
            Message::assistant(r#"{"name": "Chur", "population": 0, "canton": "GR"}"#),
            Message::assistant(r#"{"name": "Chur", "population": 37000, "canton": "GR"}"#),
        ]);
    };
    let mut env = agent.env();
    env.messages.push(Message::user("Oldest town?"));
    env.extensions.insert(
        OutputSchema::of::<City>().check(|v| match v["population"].as_u64() {
            Some(0) => Err("a town has people".into()),
            _ => Ok(()),
        }),
    );
    let city = agent.turn_typed::<City>(env).await.unwrap();
    assert_eq!(city.value.population, 37000);
    let messages = &city.outcome.env.messages;
    assert!(
        messages[2].content.contains("a town has people"),
        "{}",
        messages[2].content
    );
}

/// Looks up a city's population.
#[brute::tool]
async fn population(
    /// The city.
    city: String,
) -> Result<String, brute::tools::ToolError> {
    Ok(if city == "Zürich" {
        "443037"
    } else {
        "unknown"
    }
    .to_string())
}

#[tokio::test]
async fn the_model_may_call_tools_before_the_answer_tool() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        anthropic_calls("population", json!({"city": "Zürich"})),
        anthropic_calls(
            "City",
            json!({"name": "Zürich", "population": 443037, "canton": "ZH"}),
        ),
    ])
    .await;
    let model = anthropic(&server);
    let agent = brute_agent! {
        use Structured;
        use Loop::ToolResult;
        use brute::tools::DefaultToolPipeline { tools: (Population,), root: dir.path() };
        run model;
    };
    let city = agent
        .start_typed::<City>("Largest Swiss city?")
        .await
        .unwrap();
    assert_eq!(city.value, zurich());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let body = request.json();
        // Some tool must be called: the model chooses which.
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["population", "City"]);
    }
    // The real tool's result went back before the answer.
    let second = requests[1].json();
    assert_eq!(
        second["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "443037"})
    );
}
