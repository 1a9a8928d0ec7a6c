//! Cost: every model call is priced by its model's name, each `ModelResponse` event and
//! the turn's outcome carry the cost (`None` for a model without a price, never a
//! made-up zero), and every store keeps the session's running total with the session,
//! so that it survives a restart and a compaction, PostgreSQL's committed with the
//! other sessions' appends waiting at the same time. PostgreSQL runs for real (see
//! `session_support`).

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::sync::{Arc, Mutex};

use brute::cost::{Cost, Price, Prices, Spend};
use brute::middleware::{Loop, SessionLog};
use brute::session::{
    BoxStore, JsonlStore, PostgresStore, SessionId, SessionStore, SqliteStore, TurnSaved,
};
use brute::{Completion, Env, Error, Event, EventKind, Message, Model, Usage, brute_agent};
use session_support::{postgres_database, sqlite_path, temp_dir};

/// A model named `name` that answers "ok" and reports 1000 prompt tokens (400 of them
/// read from the cache) and 200 completion tokens a call.
#[derive(Clone)]
struct Metered(&'static str);

impl Model for Metered {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        Ok(Completion {
            message: Message::assistant("ok"),
            usage: Some(Usage::new(1_000, 200).with_cached(400)),
        })
    }

    fn name(&self) -> &str {
        self.0
    }
}

/// gpt-4o-mini's price of one `Metered` call: 600 × $0.15 + 400 × $0.075 + 200 × $0.60
/// per million tokens.
const ONE_CALL: Cost = Cost::from_micros(90 + 30 + 120);

#[tokio::test]
async fn a_priced_model_call_reports_its_cost_in_the_event_and_the_outcome() {
    let costs = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! { run Metered("gpt-4o-mini-2024-07-18"); };
    let seen = costs.clone();
    agent.on(EventKind::ModelResponse, move |_env, event| {
        if let Event::ModelResponse { cost, .. } = event {
            seen.lock().unwrap().push(*cost);
        }
    });
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(*costs.lock().unwrap(), [Some(ONE_CALL)]);
    assert_eq!(outcome.cost(), Some(ONE_CALL));
    assert_eq!(outcome.cost().unwrap().to_string(), "$0.0002");
    assert_eq!(format!("{:.6}", outcome.cost().unwrap()), "$0.000240");
}

#[tokio::test]
async fn a_model_without_a_price_has_no_cost_not_a_zero() {
    let costs = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! { run Metered("house-model"); };
    let seen = costs.clone();
    agent.on(EventKind::ModelResponse, move |_env, event| {
        if let Event::ModelResponse { cost, .. } = event {
            seen.lock().unwrap().push(*cost);
        }
    });
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(*costs.lock().unwrap(), [None]);
    assert_eq!(outcome.cost(), None);
    assert_eq!(outcome.spend().unpriced_calls, 1);
    assert_eq!(outcome.spend().usage.total(), 1_200);
    // A closure that reports no usage: its cost is unknown too.
    let silent = brute_agent! { run |_env| async { Ok(Message::assistant("hi")) }; };
    assert_eq!(silent.start("hi").await.unwrap().cost(), None);
}

#[tokio::test]
async fn the_agents_price_table_adds_and_replaces_prices() {
    let mut agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 2 };
        run Metered("house-model");
    };
    let price = Price::per_million("1".parse().unwrap(), "2".parse().unwrap())
        .with_cached_input("0.5".parse().unwrap());
    agent.prices(Prices::published().with("house-model", price));
    let outcome = agent.start("hi").await.unwrap();
    // Two calls of 600 × $1 + 400 × $0.50 + 200 × $2 per million.
    assert_eq!(
        outcome.cost(),
        Some(Cost::from_micros(2 * (600 + 200 + 400)))
    );
    // Replacing a published price.
    let mut cheap = brute_agent! { run Metered("gpt-4o-mini"); };
    cheap.prices(
        Prices::published().with("gpt-4o-mini", Price::per_million(Cost::ZERO, Cost::ZERO)),
    );
    assert_eq!(cheap.start("hi").await.unwrap().cost(), Some(Cost::ZERO));
    // Removing one: unknown again.
    let mut gone = brute_agent! { run Metered("gpt-4o-mini"); };
    gone.prices(Prices::published().without("gpt-4o-mini"));
    assert_eq!(gone.start("hi").await.unwrap().cost(), None);
}

#[test]
fn the_published_table_prices_the_models_from_spec_names() {
    let prices = Prices::published();
    for (model, input, output) in [
        ("gpt-4o-mini", "0.15", "0.60"),
        ("claude-sonnet-4-5", "3", "15"),
        ("gemini-2.5-flash", "0.30", "2.50"),
        ("gpt-5", "1.25", "10"),
    ] {
        let price = prices.get(model).unwrap();
        assert_eq!(price.input, input.parse().unwrap(), "{model}");
        assert_eq!(price.output, output.parse().unwrap(), "{model}");
    }
    // Anthropic's cache reads and 5-minute writes.
    let sonnet = prices.get("claude-sonnet-4-5-20250929").unwrap();
    assert_eq!(
        (sonnet.cached_input, sonnet.cache_write),
        ("0.30".parse().unwrap(), "3.75".parse().unwrap())
    );
}

/// Each store, by name, at a place that outlives the store value (a folder, a file, a
/// database): `open` builds a new store value there, as a restarted process would.
struct Place {
    kind: &'static str,
    target: String,
    _dir: tempfile::TempDir,
}

impl Place {
    fn new(kind: &'static str) -> Place {
        let dir = temp_dir();
        let target = match kind {
            "jsonl" => dir.path().display().to_string(),
            "sqlite" => sqlite_path(dir.path()).display().to_string(),
            _ => postgres_database("cost"),
        };
        Place {
            kind,
            target,
            _dir: dir,
        }
    }

    async fn open(&self) -> BoxStore {
        match self.kind {
            "jsonl" => BoxStore::new(JsonlStore::new(&self.target)),
            "sqlite" => BoxStore::new(SqliteStore::open(&self.target).unwrap()),
            _ => BoxStore::new(PostgresStore::connect(&self.target).await.unwrap()),
        }
    }
}

/// Two turns of two priced calls each through `SessionLog`, then a restart, then a
/// rewrite of the whole history (what compaction stores): the running total is the
/// four calls' throughout.
async fn the_running_total_survives_restarts_and_rewrites(kind: &'static str) {
    let place = Place::new(kind);
    let per_turn = {
        let mut spend = Spend::default();
        spend.add_call(Usage::new(1_000, 200).with_cached(400), Some(ONE_CALL));
        spend.add_call(Usage::new(1_000, 200).with_cached(400), Some(ONE_CALL));
        spend
    };
    for turn in 1..=2u32 {
        let store = place.open().await;
        let agent = brute_agent! {
            use SessionLog { store: store.clone() };
            use Loop::While { condition: |env| env.iteration < 2 };
            run Metered("gpt-4o-mini");
        };
        let mut env = agent.env();
        env.extensions.insert(SessionId::from("alice"));
        env.messages.push(Message::user("hi"));
        let outcome = agent.turn(env).await.unwrap();
        assert_eq!(outcome.cost(), Some(ONE_CALL + ONE_CALL), "{kind}");
        let saved = outcome.env.extensions.get::<TurnSaved>().unwrap();
        let mut expected = Spend::default();
        for _ in 0..turn {
            expected += per_turn;
        }
        assert_eq!(saved.spend, expected, "{kind}: turn {turn}");
        drop(agent);
        drop(store);
        // A new store value on the same place: what a restarted process sees.
        let reopened = place.open().await;
        assert_eq!(
            reopened.load_spend("alice").await.unwrap(),
            expected,
            "{kind}: after turn {turn}"
        );
    }
    let total = per_turn + per_turn;
    assert_eq!(total.cost(), Some(Cost::from_micros(4 * 240)));
    // A compaction rewrites the history from position 0: the total is not part of it.
    let store = place.open().await;
    let (mut lease, history) = store.open("alice").await.unwrap();
    assert_eq!(history.len(), 6, "{kind}");
    assert_eq!(store.spend(&lease), total, "{kind}");
    store
        .replace(
            &mut lease,
            &[Message::user("[summary]"), Message::assistant("ok")],
        )
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    drop(store);
    let store = place.open().await;
    assert_eq!(store.load_spend("alice").await.unwrap(), total, "{kind}");
    assert_eq!(store.load("alice").await.unwrap().len(), 2, "{kind}");
    // A total set after the lease's last write is stored when it is released.
    let (mut lease, _) = store.open("alice").await.unwrap();
    store.set_spend(&mut lease, total + per_turn);
    store.release(lease).await.unwrap();
    drop(store);
    let store = place.open().await;
    assert_eq!(
        store.load_spend("alice").await.unwrap(),
        total + per_turn,
        "{kind}: set, then released"
    );
    // Deleting the session forgets its total.
    store.delete("alice").await.unwrap();
    assert_eq!(
        store.load_spend("alice").await.unwrap(),
        Spend::default(),
        "{kind}"
    );
}

#[tokio::test]
async fn the_jsonl_store_keeps_the_running_total() {
    the_running_total_survives_restarts_and_rewrites("jsonl").await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_running_total() {
    the_running_total_survives_restarts_and_rewrites("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn the_postgres_store_keeps_the_running_total() {
    the_running_total_survives_restarts_and_rewrites("postgres").await;
}

/// A session's running total goes with its messages into the writer's batch: appends of
/// ten sessions, each with a total, that wait while the writer is held up are stored by
/// one transaction, not one each on a connection of their own (which serialised every
/// model call of every session whose provider reports usage).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn the_postgres_store_commits_running_totals_with_other_sessions_appends() {
    use std::future::Future;
    use std::task::Poll;

    let url = postgres_database("cost_group");
    let store = PostgresStore::connect(&url).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut leases = Vec::new();
    for i in 0..=10 {
        leases.push(store.open(&format!("s{i}")).await.unwrap().0);
    }
    // The messages table held by another transaction: the writer's next statement waits.
    client
        .batch_execute("BEGIN; LOCK TABLE brute_messages IN EXCLUSIVE MODE")
        .await
        .unwrap();
    // Each append is sent to the writer on its first poll; `sent` says it was.
    let append = |mut lease, spend: Option<Spend>| {
        let store = store.clone();
        let (sent, was_sent) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            if let Some(spend) = spend {
                store.set_spend(&mut lease, spend);
            }
            let messages = [Message::user("hi")];
            let mut append = std::pin::pin!(store.append(&mut lease, &messages));
            let first = std::future::poll_fn(|cx| Poll::Ready(append.as_mut().poll(cx))).await;
            let _ = sent.send(());
            match first {
                Poll::Ready(result) => result,
                Poll::Pending => append.await,
            }
        });
        (task, was_sent)
    };
    let mut leases = leases.into_iter();
    // The first append, alone, is the writer's statement that waits for the lock.
    let (first, _) = append(leases.next().unwrap(), None);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_locks
                 WHERE NOT granted AND relation = 'brute_messages'::regclass",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never waited for the lock"
        );
        tokio::task::yield_now().await;
    }
    // Ten more, each with a running total, all sent before the lock is let go.
    let mut spend = Spend::default();
    spend.add_call(Usage::new(10, 2), None);
    let mut tasks = Vec::new();
    for lease in leases {
        let (task, sent) = append(lease, Some(spend));
        sent.await.unwrap();
        tasks.push(task);
    }
    client.batch_execute("COMMIT").await.unwrap();
    first.await.unwrap().unwrap();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    // Which transactions wrote the ten sessions' totals and messages.
    let writers: i64 = client
        .query_one(
            "SELECT count(DISTINCT x) FROM (
                 SELECT xmin::text AS x FROM brute_spend WHERE session <> 's0'
                 UNION ALL
                 SELECT xmin::text FROM brute_messages WHERE session <> 's0'
             ) w",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        writers, 1,
        "the ten appends with running totals were committed by {writers} transactions"
    );
    let totals: i64 = client
        .query_one("SELECT count(*) FROM brute_spend", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(totals, 10);
    for i in 1..=10 {
        assert_eq!(store.load_spend(&format!("s{i}")).await.unwrap(), spend);
    }
}
