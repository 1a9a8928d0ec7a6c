//! The scorers: each passes what it should and fails what it should, and says why.
#![allow(clippy::unwrap_used)]

use brute::structured::{OutputSchema, schemars};
use brute::{Message, ToolCall, providers::ScriptedModel};
use brute_eval::{
    Case, Contains, Exact, ExpectedCall, JUDGE_INSTRUCTIONS, JsonSchema, Judge, Regex, Run, Score,
    ScoreError, Scorer, ToolCalled,
};
use serde_json::json;

async fn score(scorer: &impl Scorer, case: &Case, answer: &str) -> Option<Score> {
    scorer.score(case, &Run::answer(answer)).await.unwrap()
}

fn capital() -> Case {
    Case::new("capital", "The capital of France?").expect("Paris")
}

#[tokio::test]
async fn exact_compares_the_trimmed_answer() {
    let exact = Exact::default();
    assert!(score(&exact, &capital(), "  Paris\n").await.unwrap().passed);
    let wrong = score(&exact, &capital(), "Paris.").await.unwrap();
    assert_eq!((wrong.passed, wrong.value), (false, 0.0));
    assert_eq!(wrong.detail, "expected \"Paris\"");
    assert!(!score(&exact, &capital(), "paris").await.unwrap().passed);
    let loose = Exact::default().ignore_case();
    assert!(score(&loose, &capital(), "PARIS").await.unwrap().passed);
    // No expected answer: the scorer does not apply.
    assert_eq!(score(&exact, &Case::new("x", "p"), "Paris").await, None);
}

#[tokio::test]
async fn contains_looks_for_the_expected_text_anywhere() {
    let contains = Contains::default();
    assert!(
        score(&contains, &capital(), "It is Paris, of course.")
            .await
            .unwrap()
            .passed
    );
    let missing = score(&contains, &capital(), "It is Lyon.").await.unwrap();
    assert!(!missing.passed);
    assert_eq!(missing.detail, "no \"Paris\" in the answer");
    assert!(!score(&contains, &capital(), "PARIS").await.unwrap().passed);
    let loose = Contains::default().ignore_case();
    assert!(score(&loose, &capital(), "PARIS!").await.unwrap().passed);
    assert_eq!(score(&contains, &Case::new("x", "p"), "Paris").await, None);
}

#[tokio::test]
async fn regex_matches_the_answer_and_refuses_a_bad_pattern() {
    let year = Regex::new(r"^\d{4}$").unwrap();
    assert_eq!(year.name(), "regex");
    let case = Case::new("year", "When?");
    assert!(score(&year, &case, "1994").await.unwrap().passed);
    let no = score(&year, &case, "in 1994").await.unwrap();
    assert!(!no.passed);
    assert_eq!(no.detail, r"does not match /^\d{4}$/");
    assert!(Regex::new("(unclosed").is_err());
    assert_eq!(Regex::new("x").unwrap().named("has_x").name(), "has_x");
}

#[tokio::test]
async fn json_schema_checks_the_answer_against_the_schema() {
    let city = JsonSchema::new(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
        "additionalProperties": false
    }))
    .unwrap();
    let case = Case::new("city", "Bern as JSON");
    let fenced = "```json\n{\"name\": \"Bern\", \"population\": 134794}\n```";
    assert!(score(&city, &case, fenced).await.unwrap().passed);
    let missing = score(&city, &case, r#"{"name": "Bern"}"#).await.unwrap();
    assert_eq!(missing.detail, "/: the field `population` is missing");
    let extra = score(
        &city,
        &case,
        r#"{"name": "Bern", "population": 1, "canton": "BE"}"#,
    )
    .await
    .unwrap();
    assert_eq!(extra.detail, "/: the field `canton` is not allowed");
    let prose = score(&city, &case, "Bern has 134794 people.")
        .await
        .unwrap();
    assert!(!prose.passed);
    assert!(prose.detail.starts_with("not JSON: "), "{}", prose.detail);
}

/// A city, as structured output would ask for it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "brute::structured::schemars")]
#[allow(dead_code)]
struct City {
    name: String,
    population: u64,
}

#[tokio::test]
async fn json_schema_takes_the_schema_structured_output_sends() {
    let output = OutputSchema::of::<City>();
    let scorer = JsonSchema::output(&output).unwrap();
    let case = Case::new("city", "Bern as JSON");
    assert!(
        score(&scorer, &case, r#"{"name": "Bern", "population": 134794}"#)
            .await
            .unwrap()
            .passed
    );
    let negative = score(&scorer, &case, r#"{"name": "Bern", "population": -5}"#)
        .await
        .unwrap();
    assert!(!negative.passed, "schemars gives u64 a minimum of 0");
    assert_eq!(negative.detail, "/population: should be at least 0, is -5");
}

fn weather_case() -> Case {
    Case::new("weather", "Weather in Oslo and the time?")
        .expect_call(ExpectedCall::with_arguments(
            "weather",
            json!({"city": "Oslo"}),
        ))
        .expect_call(ExpectedCall::new("clock"))
}

#[tokio::test]
async fn tool_called_wants_every_expected_call_with_its_arguments() {
    let run = Run::answer("4 °C at noon")
        .with_call(ToolCall::new(
            "1",
            "weather",
            json!({"city": "Oslo", "units": "metric"}),
        ))
        .with_call(ToolCall::new("2", "clock", json!({})));
    let all = ToolCalled
        .score(&weather_case(), &run)
        .await
        .unwrap()
        .unwrap();
    assert!(all.passed, "extra arguments are allowed: {}", all.detail);
    assert_eq!(all.value, 1.0);

    let wrong_city = Run::answer("")
        .with_call(ToolCall::new("1", "weather", json!({"city": "Bergen"})))
        .with_call(ToolCall::new("2", "clock", json!({})));
    let half = ToolCalled
        .score(&weather_case(), &wrong_city)
        .await
        .unwrap()
        .unwrap();
    assert!(!half.passed);
    assert_eq!(half.value, 0.5);
    assert_eq!(
        half.detail,
        r#"missing weather {"city":"Oslo"}; made weather {"city":"Bergen"}, clock {}"#
    );
    let none = ToolCalled
        .score(&weather_case(), &Run::answer("no idea"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((none.passed, none.value), (false, 0.0));
    assert!(none.detail.ends_with("made no call"), "{}", none.detail);
    // A case that expects no call: the scorer does not apply.
    assert_eq!(score(&ToolCalled, &capital(), "Paris").await, None);
}

#[tokio::test]
async fn the_judge_gets_the_documented_prompt_and_its_verdict_is_the_score() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let model = ScriptedModel::from_fn(move |env| {
        record.lock().unwrap().push(env.messages.clone());
        Message::assistant(
            "```json\n{\"pass\": false, \"reason\": \"Lyon is not the capital.\"}\n```",
        )
    });
    let judge = Judge::new(model).criteria("One word.");
    let score = score(&judge, &capital(), "Lyon").await.unwrap();
    assert_eq!((score.passed, score.value), (false, 0.0));
    assert_eq!(score.detail, "Lyon is not the capital.");
    let seen = seen.lock().unwrap();
    let messages = &seen[0];
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].content, JUDGE_INSTRUCTIONS);
    assert_eq!(
        messages[1].content,
        "Question:\nThe capital of France?\n\nExpected answer:\nParis\n\nCriteria:\nOne word.\n\nAnswer to grade:\nLyon"
    );
}

#[tokio::test]
async fn an_unreadable_verdict_is_an_error_never_a_pass() {
    for (reply, reason) in [
        ("Looks right to me!", "the reply is not a JSON object"),
        (r#"{"pass": "yes"}"#, "`pass` is not a boolean"),
        (r#"{"verdict": true}"#, "the object has no `pass`"),
        ("[true]", "the reply is JSON but not an object"),
    ] {
        let judge = Judge::new(ScriptedModel::new([Message::assistant(reply)]).named("grader"));
        let error = judge
            .score(&capital(), &Run::answer("Paris"))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ScoreError::Verdict {
                judge: "grader".into(),
                reason: reason.into(),
                reply: reply.into(),
            }
        );
    }
    // A judge whose call fails.
    let judge = Judge::new(ScriptedModel::new([]).named("grader"));
    let error = judge
        .score(&capital(), &Run::answer("Paris"))
        .await
        .unwrap_err();
    assert!(matches!(error, ScoreError::JudgeFailed { .. }), "{error}");
}
