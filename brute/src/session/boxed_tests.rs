//! The unit tests of `boxed.rs`: every method of a [`BoxStore`] and of its lease reaches
//! the store inside with its arguments and gives back what that store answered.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use std::sync::Mutex;

use super::*;

/// A store that writes down each call with its arguments and answers each with a
/// value of its own (none of them a default), so that a call that is not forwarded,
/// or an answer that is not the store's, shows.
#[derive(Default)]
struct Probe {
    calls: Mutex<Vec<String>>,
}

#[derive(Debug)]
struct ProbeLease {
    id: String,
    spend: Spend,
}

impl Probe {
    fn note(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    /// The calls since the last look.
    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

fn spend(calls: u64) -> Spend {
    Spend {
        calls,
        ..Spend::default()
    }
}

fn size() -> SessionSize {
    SessionSize {
        messages: 7,
        bytes: 70,
    }
}

fn info() -> SessionInfo {
    SessionInfo {
        id: "p".into(),
        size: size(),
        updated: None,
    }
}

fn store_size() -> StoreSize {
    StoreSize {
        sessions: 1,
        messages: 7,
        bytes: 70,
        disk_bytes: Some(99),
    }
}

fn report() -> RetentionReport {
    RetentionReport {
        deleted: vec!["old".into()],
        skipped: vec!["held".into()],
        kept: 2,
    }
}

impl SessionStore for Probe {
    type Lease = ProbeLease;

    async fn open(&self, id: &str) -> Result<(ProbeLease, Vec<Message>), SessionError> {
        self.note(format!("open {id}"));
        let lease = ProbeLease {
            id: id.into(),
            spend: spend(1),
        };
        Ok((lease, vec![Message::user(format!("in {id}"))]))
    }

    async fn append(
        &self,
        lease: &mut ProbeLease,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        self.note(format!("append {} {}", lease.id, messages.len()));
        Ok(())
    }

    async fn rewrite(
        &self,
        lease: &mut ProbeLease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        self.note(format!("rewrite {} {from} {}", lease.id, messages.len()));
        Ok(())
    }

    async fn release(&self, lease: ProbeLease) -> Result<(), SessionError> {
        self.note(format!("release {} {}", lease.id, lease.spend.calls));
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        self.note(format!("load {id}"));
        Ok(vec![Message::user(format!("loaded {id}"))])
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.note("list".into());
        Ok(vec!["p".into(), "q".into()])
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.note(format!("delete {id}"));
        Ok(())
    }

    async fn size(&self, id: &str) -> Result<SessionSize, SessionError> {
        self.note(format!("size {id}"));
        Ok(size())
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, SessionError> {
        self.note("sessions".into());
        Ok(vec![info()])
    }

    async fn store_size(&self) -> Result<StoreSize, SessionError> {
        self.note("store_size".into());
        Ok(store_size())
    }

    async fn retain(&self, policy: &Retention) -> Result<RetentionReport, SessionError> {
        self.note(format!("retain {:?}", policy.max_sessions));
        Ok(report())
    }

    async fn prune<'a>(
        &'a self,
        id: &'a str,
        keep: usize,
        archive: &'a Archive<'a>,
    ) -> Result<usize, SessionError> {
        self.note(format!("prune {id} {keep}"));
        archive(id, &[Message::user("archived")]).unwrap();
        Ok(5)
    }

    async fn fork(&self, from: &str, at: usize, to: &str) -> Result<usize, SessionError> {
        self.note(format!("fork {from} {at} {to}"));
        Ok(at + 100)
    }

    async fn rewind(&self, id: &str, to: usize) -> Result<Vec<Message>, SessionError> {
        self.note(format!("rewind {id} {to}"));
        Ok(vec![Message::user(format!("cut at {to}"))])
    }

    fn abandon(&self, lease: ProbeLease, ending: Abandoned) {
        self.note(format!("abandon {} {ending:?}", lease.id));
    }

    fn spend(&self, lease: &ProbeLease) -> Spend {
        lease.spend
    }

    fn set_spend(&self, lease: &mut ProbeLease, spend: Spend) {
        lease.spend = spend;
    }

    async fn load_spend(&self, id: &str) -> Result<Spend, SessionError> {
        self.note(format!("load_spend {id}"));
        Ok(spend(9))
    }
}

#[tokio::test]
async fn a_boxed_lease_forwards_each_write_and_its_running_total() {
    let probe = Arc::new(Probe::default());
    let store = BoxStore::from_arc(probe.clone());
    let (mut lease, messages) = store.open("s").await.unwrap();
    assert_eq!(messages, [Message::user("in s")]);
    assert_eq!(store.spend(&lease), spend(1));
    store.set_spend(&mut lease, spend(2));
    assert_eq!(store.spend(&lease), spend(2));
    store
        .append(&mut lease, &[Message::user("a")])
        .await
        .unwrap();
    let two = [Message::user("b"), Message::user("c")];
    store.rewrite(&mut lease, 1, &two).await.unwrap();
    store
        .replace(&mut lease, &[Message::user("d")])
        .await
        .unwrap();
    assert_eq!(format!("{lease:?}"), "BoxLease(..)");
    store.release(lease).await.unwrap();
    let (lease, _) = store.open("t").await.unwrap();
    store.abandon(lease, Abandoned::RemoveLast(1));
    assert_eq!(
        probe.calls(),
        [
            "open s",
            "append s 1",
            "rewrite s 1 2",
            "rewrite s 0 1",
            "release s 2",
            "open t",
            "abandon t RemoveLast(1)"
        ]
    );
}

#[tokio::test]
async fn the_lease_session_log_holds_forwards_each_write_too() {
    let probe = Arc::new(Probe::default());
    let store = BoxStore::from_arc(probe.clone());
    let (mut lease, messages) = store.open_dyn("u").await.unwrap();
    assert_eq!(messages, [Message::user("in u")]);
    assert_eq!(lease.spend(), spend(1));
    lease.set_spend(spend(3));
    assert_eq!(lease.spend(), spend(3));
    lease.append(&[Message::user("a")]).await.unwrap();
    lease.rewrite(2, &[]).await.unwrap();
    lease
        .replace(&[Message::user("b"), Message::user("c")])
        .await
        .unwrap();
    lease.release().await.unwrap();
    let (lease, _) = store.open_dyn("v").await.unwrap();
    lease.abandon(Abandoned::Nothing);
    assert_eq!(
        probe.calls(),
        [
            "open u",
            "append u 1",
            "rewrite u 2 0",
            "rewrite u 0 2",
            "release u 3",
            "open v",
            "abandon v Nothing"
        ]
    );
}

#[tokio::test]
async fn a_boxed_store_forwards_each_question_and_its_answer() {
    let probe = Arc::new(Probe::default());
    let store = BoxStore::from_arc(probe.clone());
    assert_eq!(store.load("s").await.unwrap(), [Message::user("loaded s")]);
    assert_eq!(store.list().await.unwrap(), ["p", "q"]);
    store.delete("s").await.unwrap();
    assert_eq!(store.size("s").await.unwrap(), size());
    assert_eq!(store.sessions().await.unwrap(), [info()]);
    assert_eq!(store.store_size().await.unwrap(), store_size());
    let policy = Retention::new().max_sessions(3);
    assert_eq!(store.retain(&policy).await.unwrap(), report());
    let archived = Mutex::new(Vec::new());
    let archive = |id: &str, messages: &[Message]| {
        archived
            .lock()
            .unwrap()
            .push(format!("{id} {}", messages.len()));
        Ok(())
    };
    assert_eq!(store.prune("s", 4, &archive).await.unwrap(), 5);
    assert_eq!(*archived.lock().unwrap(), ["s 1"]);
    assert_eq!(store.fork("s", 2, "f").await.unwrap(), 102);
    assert_eq!(
        store.rewind("s", 1).await.unwrap(),
        [Message::user("cut at 1")]
    );
    assert_eq!(store.load_spend("s").await.unwrap(), spend(9));
    assert_eq!(
        probe.calls(),
        [
            "load s",
            "list",
            "delete s",
            "size s",
            "sessions",
            "store_size",
            "retain Some(3)",
            "prune s 4",
            "fork s 2 f",
            "rewind s 1",
            "load_spend s"
        ]
    );
}

#[test]
fn boxing_a_boxed_store_keeps_its_one_pointer() {
    let store = BoxStore::new(Probe::default());
    let again = BoxStore::from_arc(Arc::new(store.clone()));
    assert!(Arc::ptr_eq(&store.0, &again.0));
    let other = BoxStore::new(Probe::default());
    assert!(!Arc::ptr_eq(&store.0, &other.0));
    let shared = Store::from(Arc::new(store.clone()));
    assert!(Arc::ptr_eq(&store.0, &shared.0.as_ref().unwrap().0));
}

#[test]
fn a_store_says_which_it_is_without_its_contents() {
    assert_eq!(
        format!("{:?}", Store::default()),
        "Store(files at SessionLog's path)"
    );
    assert_eq!(format!("{:?}", Store::new(Probe::default())), "Store(..)");
    assert_eq!(format!("{:?}", Store::from(Probe::default())), "Store(..)");
    assert_eq!(
        format!("{:?}", BoxStore::new(Probe::default())),
        "BoxStore(..)"
    );
}
