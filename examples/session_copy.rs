//! Moves sessions between stores: a folder of JSONL sessions into a SQLite database,
//! and from there into PostgreSQL when a connection string is given.
//!
//! ```text
//! cargo run --example session_copy -- [JSONL_DIR] [SQLITE_FILE] [POSTGRES_URL]
//! ```
//!
//! Without arguments it makes a folder with two sample sessions in a temporary folder
//! and copies them into a SQLite file beside it. With `POSTGRES_URL`
//! (`host=127.0.0.1 port=5432 user=postgres dbname=brute`), the sessions go on into
//! PostgreSQL. Run it while no agent runs turns on these sessions (a session in a
//! turn is refused rather than copied half-way).

mod common;

use brute::Message;
use brute::session::{JsonlStore, PostgresStore, SessionStore, SqliteStore, copy_sessions};

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let mut args = std::env::args().skip(1);
    let scratch = std::env::temp_dir().join(format!("brute-session-copy-{}", std::process::id()));
    let jsonl_dir = args
        .next()
        .map_or_else(|| scratch.join("sessions"), Into::into);
    let sqlite_file = args
        .next()
        .map_or_else(|| scratch.join("sessions.db"), Into::into);
    let postgres = args.next();

    let jsonl = JsonlStore::new(&jsonl_dir);
    if jsonl.list().await?.is_empty() {
        println!(
            "{} has no sessions: writing two samples",
            jsonl_dir.display()
        );
        for (id, name) in [("alice", "Alice"), ("bob", "Bob")] {
            let (mut lease, _) = jsonl.open(id).await?;
            let hello = [
                Message::user(format!("My name is {name}.")),
                Message::assistant("Nice to meet you."),
            ];
            jsonl.append(&mut lease, &hello).await?;
            jsonl.release(lease).await?;
        }
    }

    let sqlite = SqliteStore::open(&sqlite_file)?;
    let copied = copy_sessions(&jsonl, &sqlite).await?;
    println!(
        "copied {copied} sessions from {} to {}",
        jsonl_dir.display(),
        sqlite_file.display()
    );
    for id in sqlite.list().await? {
        println!("  {id}: {} messages", sqlite.load(&id).await?.len());
    }

    if let Some(url) = postgres {
        let pg = PostgresStore::connect(&url).await?;
        let copied = copy_sessions(&sqlite, &pg).await?;
        println!(
            "copied {copied} sessions from {} to PostgreSQL",
            sqlite_file.display()
        );
    }
    Ok(())
}
