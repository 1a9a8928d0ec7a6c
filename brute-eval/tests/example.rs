//! `examples/eval.rs`, offline: its JSON report is the one kept in
//! `tests/data/example_report.json`, and a run that got the weather case wrong is listed
//! as a regression against it.
//!
//! The example is compiled into this binary as a module (its own file, unchanged) and its
//! `run` is called with its scripted models, whatever `BRUTE_MODEL` says. To accept a
//! changed report on purpose, run with `BRUTE_EVAL_OVERWRITE=1` and read the diff.
#![allow(clippy::unwrap_used)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/eval.rs"]
mod example;

use brute::providers::ScriptedModel;
use brute_eval::{Progress, Regression, Report};
use serde_json::json;

const EXPECTED: &str = include_str!("data/example_report.json");

#[tokio::test]
async fn the_example_writes_the_report_kept_in_tests_data() {
    let (model, judge) = example::scripted();
    let report = example::run(model, judge, Progress::Off).await.unwrap();
    let json = report.to_json();
    if std::env::var_os("BRUTE_EVAL_OVERWRITE").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/example_report.json"
        );
        std::fs::write(path, &json).unwrap();
    }
    if let Some((line, (got, want))) = json
        .lines()
        .zip(EXPECTED.lines())
        .enumerate()
        .find(|(_, (got, want))| got != want)
    {
        panic!(
            "the report differs from tests/data/example_report.json at line {}:\n  now:  {got}\n  kept: {want}\n(BRUTE_EVAL_OVERWRITE=1 accepts it)",
            line + 1
        );
    }
    assert_eq!(json, EXPECTED, "the report's length changed");
    // The table the example prints.
    assert_eq!(
        report.table(),
        r#"scripted on examples/eval/cases.jsonl
case               result  contains  tool_calls  json_schema  judge  notes
capital-france     PASS    1.00      -           -            -      Paris.
arithmetic         PASS    1.00      -           -            -      42
weather-oslo       PASS    1.00      1.00        -            -      Right now: Oslo: 4 °C, light snow.
json-city          PASS    -         -           1.00         -      {"name": "Bern", "population": 134794}
open-welcome       PASS    -         -           -            1.00   Welcome aboard: we are glad you are here!
capital-australia  FAIL    0.00      -           -            -      contains: no "Canberra" in the answer
5 of 6 passed, 1 failed (0 did not run); means: contains 0.75, tool_calls 1.00, json_schema 1.00, judge 1.00
"#
    );
}

#[tokio::test]
async fn a_run_that_calls_the_tool_wrongly_is_a_regression_against_the_kept_report() {
    let baseline = Report::from_json("tests/data/example_report.json", EXPECTED).unwrap();
    // The scripted agent, but asking for Bergen's weather instead of Oslo's.
    let model = ScriptedModel::from_fn(|env| {
        let mut reply = example::script(env);
        for call in &mut reply.tool_calls {
            call.arguments = json!({"city": "Bergen"});
        }
        reply
    })
    .named("scripted");
    let (_, judge) = example::scripted();
    let report = example::run(model.into(), judge, Progress::Off)
        .await
        .unwrap();
    let comparison = report.compare(&baseline);
    assert_eq!(
        comparison.regressions,
        [
            Regression::NowFails {
                id: "weather-oslo".into(),
                why: r#"contains: no "Oslo" in the answer; tool_calls: missing weather {"city":"Oslo"}; made weather {"city":"Bergen"}"#.into(),
            },
            Regression::ScoreDropped {
                id: "weather-oslo".into(),
                scorer: "contains".into(),
                before: 1.0,
                after: 0.0
            },
            Regression::ScoreDropped {
                id: "weather-oslo".into(),
                scorer: "tool_calls".into(),
                before: 1.0,
                after: 0.0
            },
        ]
    );
    assert!(comparison.fixed.is_empty() && comparison.added.is_empty());
}
