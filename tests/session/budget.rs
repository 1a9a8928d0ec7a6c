//! Budgets: `Budget` ends the turn with `ExitReason::Limit { by: "Budget", .. }` before
//! a model call would take the tokens or the money past its limit, per turn and per
//! session (across turns, through the running total the session store keeps).
//! PostgreSQL runs for real (see `session_support`).

#![allow(clippy::unwrap_used)]

use crate::session_support;

use brute::cost::{Cost, Spend};
use brute::middleware::{Budget, BudgetError, BudgetExceeded, BudgetScope, Loop, SessionLog};
use brute::session::{BoxStore, JsonlStore, PostgresStore, SessionId, SqliteStore, Store};
use brute::{Completion, Env, Error, ExitReason, Message, Model, StopReason, Usage, brute_agent};
use session_support::{postgres_database, sqlite_path, temp_dir};

/// `gpt-4o-mini` as far as the price table knows, reporting 1000 prompt and 200
/// completion tokens a call ($0.00027 at $0.15 and $0.60 per million).
#[derive(Clone)]
struct Metered;

impl Model for Metered {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        Ok(Completion {
            message: Message::assistant("more"),
            usage: Some(Usage::new(1_000, 200)),
        })
    }

    fn name(&self) -> &str {
        "gpt-4o-mini"
    }
}

/// What one `Metered` call costs.
const ONE_CALL: Cost = Cost::from_micros(150 + 120);

fn stopped_by_budget(limit: u32) -> StopReason {
    StopReason::Exited(ExitReason::Limit {
        by: "Budget",
        limit,
    })
}

/// The loops of these tests stop only by the budget, or at this many passes: a
/// budget that never stops a turn fails the test's assertions instead of looping on.
const PASS_CAP: u32 = 100;

#[tokio::test]
async fn a_token_budget_ends_the_turn_before_the_call_that_would_exceed_it() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < PASS_CAP };
        use Budget { tokens: 5_000 };
        run Metered;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, stopped_by_budget(5_000));
    // 1200 a call, and each next one estimated at 1400 (the last prompt, its reply
    // and the last output): after four (4800) a fifth would pass 5000.
    assert_eq!(outcome.env.usage().total(), 4_800);
    let exceeded = outcome.env.extensions.get::<BudgetExceeded>().unwrap();
    assert_eq!(exceeded.spent.usage.total(), 4_800);
    assert_eq!(exceeded.next_tokens, 1_400);
    assert!(outcome.env.usage().total() <= 5_000);
}

#[tokio::test]
async fn a_money_budget_ends_the_turn_before_the_call_that_would_exceed_it() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < PASS_CAP };
        use Budget { cost: Cost::from_micros(1_000) };
        run Metered;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, stopped_by_budget(1_000));
    // $0.00027 a call: three spend $0.00081, and a fourth (estimated at the average
    // rate per token, for 1400 tokens: $0.000315) would pass $0.001.
    assert_eq!(outcome.cost(), Some(Cost::from_micros(3 * 270)));
    assert!(outcome.cost().unwrap() <= Cost::from_micros(1_000));
}

#[tokio::test]
async fn a_budget_that_is_not_reached_changes_nothing() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 3 };
        use Budget { tokens: 1_000_000, cost: Cost::from_cents(100) };
        run Metered;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.env.usage().total(), 3_600);
}

#[tokio::test]
async fn a_money_budget_on_a_model_without_a_price_fails_rather_than_guess() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < PASS_CAP };
        use Budget { cost: Cost::from_cents(1) };
        run |_env| async {
            Ok(Completion { message: Message::assistant("more"), usage: Some(Usage::new(10, 1)) })
        };
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(
        error.downcast_ref::<BudgetError>(),
        Some(&BudgetError::Unpriced { calls: 1 })
    );
    assert!(error.to_string().contains("agent.prices"), "{error}");
}

#[tokio::test]
async fn a_session_budget_without_a_session_is_an_error_naming_the_fix() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < PASS_CAP };
        use Budget { tokens: 10, scope: BudgetScope::Session };
        run Metered;
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(
        error.downcast_ref::<BudgetError>(),
        Some(&BudgetError::NoSession)
    );
    assert!(error.to_string().contains("use SessionLog"), "{error}");
}

/// A new store value on the same place as `kind`'s at `target`.
async fn open(kind: &str, target: &str) -> BoxStore {
    match kind {
        "jsonl" => BoxStore::new(JsonlStore::new(target)),
        "sqlite" => BoxStore::new(SqliteStore::open(target).unwrap()),
        _ => BoxStore::new(PostgresStore::connect(target).await.unwrap()),
    }
}

/// A turn of session `alice` on `store` of at most `passes` calls, or until the
/// budget stops it.
async fn session_turn(
    store: Store,
    passes: u32,
    budget_tokens: Option<u64>,
    budget_cost: Option<Cost>,
) -> brute::Outcome {
    let agent = brute_agent! {
        use SessionLog { store: store };
        use Loop::While { condition: move |env| env.iteration < passes };
        use Budget { tokens: budget_tokens, cost: budget_cost, scope: BudgetScope::Session };
        run Metered;
    };
    let mut env = agent.env();
    env.extensions.insert(SessionId::from("alice"));
    env.messages.push(Message::user("go"));
    agent.turn(env).await.unwrap()
}

/// Per session, across two turns and a restart: the first turn spends part of the
/// budget, the second (on a new store value) only the rest, and a third none.
async fn a_session_budget_spans_turns(kind: &'static str, target: String) {
    // Tokens: 6000 for the session. Turn one makes its 3 calls (3600) and completes.
    // Turn two's first call is estimated at the session's average call (1200): 4800,
    // made; its second at 1400 more: 6200, not made.
    let first = session_turn(open(kind, &target).await.into(), 3, Some(6_000), None).await;
    assert_eq!(first.stop, StopReason::Completed, "{kind}");
    assert_eq!(first.env.usage().total(), 3_600, "{kind}");
    let second = session_turn(open(kind, &target).await.into(), 3, Some(6_000), None).await;
    assert_eq!(second.stop, stopped_by_budget(6_000), "{kind}");
    assert_eq!(second.env.usage().total(), 1_200, "{kind}");
    // Turn three: 4800 + the average 1200 is 6000, not past it: one call, and then
    // the session is at its limit; turn four makes none.
    let third = session_turn(open(kind, &target).await.into(), 3, Some(6_000), None).await;
    assert_eq!(third.env.usage().total(), 1_200, "{kind}");
    let fourth = session_turn(open(kind, &target).await.into(), 3, Some(6_000), None).await;
    assert_eq!(fourth.stop, stopped_by_budget(6_000), "{kind}");
    assert_eq!(
        fourth.env.usage().total(),
        0,
        "{kind}: the session's budget is spent"
    );
    use brute::session::SessionStore;
    let total: Spend = open(kind, &target).await.load_spend("alice").await.unwrap();
    assert_eq!(total.usage.total(), 6_000, "{kind}");
    assert_eq!(total.calls, 5, "{kind}");
    assert_eq!(total.cost(), Some(Cost::from_micros(5 * 270)), "{kind}");
}

/// Money per session: $0.0015. Turn one makes its 3 calls ($0.00081); turn two one
/// at the average call ($0.00108), one at 1400 tokens at the average rate
/// ($0.001395), and not a third ($0.001665).
async fn a_session_money_budget_spans_turns(kind: &'static str, target: String) {
    let limit = Cost::from_micros(1_500);
    let first = session_turn(open(kind, &target).await.into(), 3, None, Some(limit)).await;
    assert_eq!(first.stop, StopReason::Completed, "{kind}");
    assert_eq!(first.cost(), Some(ONE_CALL + ONE_CALL + ONE_CALL), "{kind}");
    let second = session_turn(open(kind, &target).await.into(), 3, None, Some(limit)).await;
    assert_eq!(second.stop, stopped_by_budget(1_500), "{kind}");
    assert_eq!(second.cost(), Some(ONE_CALL + ONE_CALL), "{kind}");
    use brute::session::SessionStore;
    let total = open(kind, &target).await.load_spend("alice").await.unwrap();
    assert_eq!(total.cost(), Some(Cost::from_micros(5 * 270)), "{kind}");
    assert!(total.cost().unwrap() <= limit);
}

#[tokio::test]
async fn a_session_budget_spans_turns_on_jsonl() {
    let dir = temp_dir();
    a_session_budget_spans_turns("jsonl", dir.path().display().to_string()).await;
    let money = temp_dir();
    a_session_money_budget_spans_turns("jsonl", money.path().display().to_string()).await;
}

#[tokio::test]
async fn a_session_budget_spans_turns_on_sqlite() {
    let dir = temp_dir();
    a_session_budget_spans_turns("sqlite", sqlite_path(dir.path()).display().to_string()).await;
    let money = temp_dir();
    a_session_money_budget_spans_turns("sqlite", sqlite_path(money.path()).display().to_string())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn a_session_budget_spans_turns_on_postgres() {
    a_session_budget_spans_turns("postgres", postgres_database("budget_tokens")).await;
    a_session_money_budget_spans_turns("postgres", postgres_database("budget_money")).await;
}
