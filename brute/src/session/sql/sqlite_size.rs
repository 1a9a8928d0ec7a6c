//! The sizes of a [`SqliteStore`]'s sessions and of its database, for
//! [`SessionStore::size`](crate::session::SessionStore::size) and its siblings.

use crate::session::admin::retention::{SessionInfo, SessionSize, StoreSize, from_unix_ms};
use crate::session::error::SessionError;
use crate::session::sql::lease::Step;
use crate::session::sql::retention_db::{SQLITE, count};
use crate::session::sql::sqlite::SqliteStore;

impl SqliteStore {
    /// The rows of the session and the bytes of their JSON.
    pub(in crate::session) async fn measure(&self, id: &str) -> Result<SessionSize, SessionError> {
        let session = id.to_string();
        self.run(id, move |conn, sql| {
            conn.prepare_cached(SQLITE.size)
                .and_then(|mut q| {
                    q.query_row([&session], |row| {
                        Ok(SessionSize {
                            messages: count(row.get(0)?),
                            bytes: count(row.get(1)?),
                        })
                    })
                })
                .map_err(sql.fail(Step::Load, &session))
        })
        .await
    }

    /// Every session with its size and its last write.
    pub(in crate::session) async fn session_infos(&self) -> Result<Vec<SessionInfo>, SessionError> {
        self.run("", |conn, sql| {
            let fail = || sql.fail(Step::List, "");
            let mut statement = conn.prepare_cached(SQLITE.sessions).map_err(fail())?;
            let sessions = statement
                .query_map([], |row| {
                    Ok(SessionInfo {
                        id: row.get(0)?,
                        size: SessionSize {
                            messages: count(row.get(1)?),
                            bytes: count(row.get(2)?),
                        },
                        updated: from_unix_ms(row.get(3)?),
                    })
                })
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(fail())?;
            Ok(sessions)
        })
        .await
    }

    /// The sessions' totals, and the database file's pages for `disk_bytes` (the
    /// write-ahead log aside).
    pub(in crate::session) async fn measure_store(&self) -> Result<StoreSize, SessionError> {
        let mut size = StoreSize::of(&self.session_infos().await?);
        let disk = self
            .run("", |conn, sql| {
                conn.query_row(SQLITE.disk, [], |row| row.get::<_, i64>(0))
                    .map_err(sql.fail(Step::List, ""))
            })
            .await?;
        size.disk_bytes = Some(count(disk));
        Ok(size)
    }
}
