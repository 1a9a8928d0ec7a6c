//! The unit tests of `retention.rs`: the size a store of your own reports, and the age
//! limit of a policy.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use super::*;
use crate::session::{JsonlStore, SessionStore};

#[tokio::test]
async fn the_size_of_messages_is_what_the_jsonl_store_stores_of_them() {
    let messages = [
        Message::system("not stored"),
        Message::user("a"),
        Message::assistant("a longer reply, é"),
        Message::user("b"),
    ];
    let size = SessionSize::of(&messages);
    assert_eq!(size.messages, 3);
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let (mut lease, _) = store.open("s").await.unwrap();
    store.append(&mut lease, &messages).await.unwrap();
    store.release(lease).await.unwrap();
    let file = std::fs::metadata(store.path_of("s").unwrap())
        .unwrap()
        .len();
    assert_eq!(
        size.bytes, file,
        "the bytes of the stored lines and their newlines"
    );
    assert_eq!(store.size("s").await.unwrap(), size);
    assert_eq!(SessionSize::of(&[]), SessionSize::default());
}

#[test]
fn a_session_exactly_as_old_as_the_limit_is_kept() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let at = |id: &str, secs| SessionInfo {
        id: id.into(),
        size: SessionSize::default(),
        updated: Some(now - Duration::from_secs(secs)),
    };
    let sessions = [at("at-the-limit", 60), at("older", 61), at("newer", 59)];
    let policy = Retention::new().max_age(Duration::from_secs(60)).now(now);
    assert_eq!(policy.victims(&sessions), ["older"]);
}

#[tokio::test]
async fn a_prune_with_nothing_to_cut_hands_nothing_to_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let (mut lease, _) = store.open("s").await.unwrap();
    let two = [Message::user("a"), Message::assistant("b")];
    store.append(&mut lease, &two).await.unwrap();
    store.release(lease).await.unwrap();
    let handed = std::sync::atomic::AtomicUsize::new(0);
    let archive = |_: &str, _: &[Message]| {
        handed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    };
    assert_eq!(store.prune("s", 10, &archive).await.unwrap(), 0);
    assert_eq!(handed.into_inner(), 0);
    assert_eq!(store.load("s").await.unwrap(), two);
}
