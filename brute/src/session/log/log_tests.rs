//! The unit tests of `SessionLog` that look inside the layer: its default store is
//! built once and shared by every turn.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use super::*;
use crate::model::FnTerminal;
use crate::stack::{Layer, Middleware, NoApp};

use std::sync::atomic::{AtomicUsize, Ordering};

/// The layer's cell of its default store, as a terminal inside the layer sees it.
type Files = Arc<OnceLock<Arc<OnceLock<Arc<JsonlStore>>>>>;

/// A terminal that answers every prompt, and counts the turns that run on the store in
/// `files` (which the turn's lease holds a reference to while it runs).
fn answer(
    files: Files,
    shared: Arc<AtomicUsize>,
) -> impl Fn(&Env) -> std::future::Ready<Result<Message, Error>> + Clone + Send + Sync {
    move |_env| {
        let store = files.get().and_then(|cell| cell.get());
        if store.is_some_and(|store| Arc::strong_count(store) > 1) {
            shared.fetch_add(1, Ordering::Relaxed);
        }
        std::future::ready(Ok(Message::assistant("ok")))
    }
}

/// One turn of `layer` on the session file `path`, or the `path` option without one.
async fn turn<A: Handler<Env>>(layer: &SessionLog<A>, path: Option<PathBuf>) {
    let mut env = Env::new();
    if let Some(path) = path {
        env.extensions.insert(SessionPath(path));
    }
    env.messages.push(Message::user("hi"));
    layer.call(&mut env).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_path_form_opens_its_store_once_for_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::default();
    let shared = Arc::new(AtomicUsize::new(0));
    let layer = SessionLog::<NoApp>::options()
        .path(dir.path().join("default.jsonl"))
        .layer(FnTerminal::new(answer(files.clone(), shared.clone())));
    files.set(layer.files.clone()).unwrap();
    assert!(
        layer.files.get().is_none(),
        "built on the first turn, not before"
    );
    turn(&layer, None).await;
    let first = Arc::as_ptr(layer.files.get().unwrap());
    // Later turns of the same file, of other files (a `SessionPath`, a `SessionId`
    // beside the path), one after the other and at once, and a clone of the layer: all
    // through the same store.
    for _ in 0..5 {
        turn(&layer, None).await;
    }
    let layer = Arc::new(layer);
    let turns: Vec<_> = (0..20)
        .map(|n| {
            let layer = layer.clone();
            let path = dir.path().join(format!("s{n}.jsonl"));
            tokio::spawn(async move { turn(&layer, Some(path)).await })
        })
        .collect();
    for turn in turns {
        turn.await.unwrap();
    }
    let clone = (*layer).clone();
    let mut env = Env::new();
    env.extensions.insert(SessionId::from("alice"));
    env.messages.push(Message::user("hi"));
    clone.call(&mut env).await.unwrap();
    assert!(dir.path().join("alice.jsonl").exists());
    let store = layer.files.get().unwrap();
    assert_eq!(Arc::as_ptr(store), first, "a turn built a store of its own");
    assert!(std::ptr::eq(Arc::as_ptr(clone.files.get().unwrap()), first));
    // No turn kept a reference: the layer (and its clone, which shares the cell) holds
    // the only one.
    assert_eq!(Arc::strong_count(store), 1);
    assert_eq!(
        shared.load(Ordering::Relaxed),
        27,
        "every turn runs on the layer's store"
    );
    let lines = std::fs::read_to_string(dir.path().join("default.jsonl")).unwrap();
    assert_eq!(
        lines.lines().count(),
        12,
        "six turns of the default file, stored"
    );
}
