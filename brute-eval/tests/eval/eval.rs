//! Running an eval: the concurrency limit, dataset order, failures that do not stop the
//! others, agents, reports as JSON and their comparison.
#![allow(clippy::unwrap_used)]

use std::cell::Cell;

use brute::{Message, brute_agent, providers::ScriptedModel};
use brute_eval::{
    Case, Contains, Dataset, Eval, Exact, Judge, Progress, Regression, Report, Run, Score,
    ScoreFuture, Scorer,
};

fn numbers(count: usize) -> Dataset {
    Dataset::new(
        "numbers",
        (0..count).map(|i| Case::new(format!("n{i}"), format!("{i}")).expect(format!("{i}"))),
    )
}

/// Lets the other futures of the eval run: `polls` times back to the executor.
async fn yield_times(polls: usize) {
    for _ in 0..polls {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn no_more_cases_run_at_once_than_the_limit() {
    for limit in [1, 2, 3] {
        let in_flight = Cell::new(0usize);
        let most = Cell::new(0usize);
        let report = Eval::new(numbers(7))
            .concurrency(limit)
            .progress(Progress::Off)
            .scorer(Exact::default())
            .run(async |case: &Case| {
                in_flight.set(in_flight.get() + 1);
                most.set(most.get().max(in_flight.get()));
                // Every run waits long enough for all the others to start, if they may.
                yield_times(10).await;
                in_flight.set(in_flight.get() - 1);
                Ok::<_, String>(Run::answer(case.prompt.clone()))
            })
            .await;
        assert_eq!(most.get(), limit, "limit {limit}");
        assert_eq!(report.summary.passed, 7);
    }
}

#[tokio::test]
async fn the_report_keeps_dataset_order_when_later_cases_finish_first() {
    let finished = std::cell::RefCell::new(Vec::new());
    let report = Eval::new(numbers(5))
        .concurrency(5)
        .progress(Progress::Off)
        .run(async |case: &Case| {
            let i: usize = case.prompt.parse().unwrap();
            yield_times((5 - i) * 3).await;
            finished.borrow_mut().push(case.id.clone());
            Ok::<_, String>(Run::answer("x"))
        })
        .await;
    assert_eq!(*finished.borrow(), ["n4", "n3", "n2", "n1", "n0"]);
    let ids: Vec<&str> = report.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["n0", "n1", "n2", "n3", "n4"]);
}

#[tokio::test]
async fn a_case_whose_run_fails_fails_with_its_error_and_the_others_still_run() {
    let report = Eval::new(numbers(3))
        .progress(Progress::Off)
        .scorer(Exact::default())
        .run(async |case: &Case| {
            if case.id == "n1" {
                Err("the model is down".to_owned())
            } else {
                Ok(Run::answer(case.prompt.clone()))
            }
        })
        .await;
    let failed = report.case("n1").unwrap();
    assert!(!failed.passed);
    assert_eq!(failed.error.as_deref(), Some("the model is down"));
    assert_eq!(
        (
            report.summary.passed,
            report.summary.failed,
            report.summary.errors
        ),
        (2, 1, 1)
    );
    assert!(
        report.table().contains("did not run: the model is down"),
        "{}",
        report.table()
    );
}

#[tokio::test]
async fn an_agent_runs_each_case_as_a_turn_and_its_judge_error_fails_the_case() {
    // Every turn answers "Paris"; the judge answers prose, which is no verdict.
    let agent = brute_agent! { run ScriptedModel::per_turn([Message::assistant("Paris")]); };
    let judge = Judge::new(ScriptedModel::from_fn(|_| {
        Message::assistant("Fine by me.")
    }));
    let dataset = Dataset::new(
        "capitals",
        [
            Case::new("fr", "France?").expect("Paris"),
            Case::new("it", "Italy?").expect("Rome"),
        ],
    );
    let report = Eval::new(dataset)
        .progress(Progress::Off)
        .scorer(Contains::default())
        .scorer(judge)
        .run_agent(&agent)
        .await;
    let fr = report.case("fr").unwrap();
    assert_eq!(fr.answer, "Paris");
    assert!(fr.scores["contains"].passed);
    assert!(!fr.passed, "an unreadable verdict is not a pass");
    let judged = &fr.scores["judge"];
    assert!(!judged.passed);
    assert!(
        judged
            .error
            .as_deref()
            .unwrap()
            .contains("gave no readable verdict"),
        "{judged:?}"
    );
    assert!(!report.case("it").unwrap().passed);
    assert_eq!(report.summary.means["contains"], 0.5);
}

/// Scores the answer by its length: 1 for 4 characters, less for fewer; passes at 0.5.
struct Length;

impl Scorer for Length {
    fn name(&self) -> &str {
        "length"
    }
    fn score<'a>(&'a self, _case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        let value = (run.answer.len() as f64 / 4.0).min(1.0);
        Box::pin(async move {
            Ok(Some(Score {
                value,
                passed: value >= 0.5,
                detail: String::new(),
            }))
        })
    }
}

async fn lengths(answers: &[(&str, &str)]) -> Report {
    let dataset = Dataset::new("lengths", answers.iter().map(|(id, _)| Case::new(*id, *id)));
    Eval::new(dataset)
        .progress(Progress::Off)
        .scorer(Length)
        .run(async |case: &Case| {
            let answer = answers.iter().find(|(id, _)| *id == case.id).unwrap().1;
            Ok::<_, String>(Run::answer(answer))
        })
        .await
}

#[tokio::test]
async fn comparing_lists_cases_that_now_fail_and_scores_that_dropped() {
    let before = lengths(&[("a", "abcd"), ("b", "abcd"), ("c", "a"), ("gone", "x")]).await;
    // Through JSON, as a later run reads a saved report.
    let before = Report::from_json("before.json", &before.to_json()).unwrap();
    let now = lengths(&[("a", "ab"), ("b", "a"), ("c", "abcd"), ("new", "abcd")]).await;
    let comparison = now.compare(&before);
    assert_eq!(
        comparison.regressions,
        [
            Regression::ScoreDropped {
                id: "a".into(),
                scorer: "length".into(),
                before: 1.0,
                after: 0.5
            },
            Regression::NowFails {
                id: "b".into(),
                why: "length".into()
            },
            Regression::ScoreDropped {
                id: "b".into(),
                scorer: "length".into(),
                before: 1.0,
                after: 0.25
            },
        ]
    );
    assert_eq!(comparison.fixed, ["c"]);
    assert_eq!(comparison.added, ["new"]);
    assert_eq!(comparison.removed, ["gone"]);
    assert!(!comparison.is_clean());
    assert_eq!(
        comparison.to_string(),
        "3 regression(s):\n  a: length dropped from 1.00 to 0.50\n  b: passed before, fails now (length)\n  b: length dropped from 1.00 to 0.25\nfixed: c\nnew: new\ngone: gone\n"
    );
    // The same run again: nothing got worse.
    assert!(now.compare(&now).is_clean());
}

#[test]
fn a_report_of_another_version_or_no_report_is_refused() {
    let error = Report::from_json("r.json", "{\"cases\": 3}").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("r.json: not an eval report: "),
        "{error}"
    );
    let dir = tempfile::tempdir().unwrap();
    let error = Report::load(dir.path().join("absent.json")).unwrap_err();
    assert!(
        error.to_string().starts_with("cannot read the report "),
        "{error}"
    );
}

#[tokio::test]
async fn a_saved_report_loads_as_it_was() {
    let report = lengths(&[("a", "abcd"), ("b", "a")]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    report.save(&path).unwrap();
    assert_eq!(Report::load(&path).unwrap(), report);
    let mut json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    json["version"] = 99.into();
    let error = Report::from_json("r.json", &json.to_string()).unwrap_err();
    assert!(error.to_string().contains("its version is 99"), "{error}");
}
