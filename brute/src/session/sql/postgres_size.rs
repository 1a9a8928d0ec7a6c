//! The sizes of a [`PostgresStore`]'s sessions and of its tables, for
//! [`SessionStore::size`](crate::session::SessionStore::size) and its siblings.

use crate::session::admin::retention::{SessionInfo, SessionSize, StoreSize, from_unix_ms};
use crate::session::error::SessionError;
use crate::session::sql::lease::{Step, database_error};
use crate::session::sql::pg_conn::PgError;
use crate::session::sql::postgres::PostgresStore;
use crate::session::sql::retention_db::{POSTGRES, count};

impl PostgresStore {
    /// The rows of the session and the bytes of their JSON.
    pub(in crate::session) async fn measure(&self, id: &str) -> Result<SessionSize, SessionError> {
        let fail = || self.sql().fail(Step::Load, id);
        let rows = self
            .query(id, POSTGRES.size, &[&id])
            .await
            .map_err(fail())?;
        let row = rows
            .first()
            .ok_or_else(|| database_error("postgres", Step::Load, id, "no row"))?;
        let (messages, bytes): (i64, i64) = row
            .try_get(0)
            .and_then(|m| Ok((m, row.try_get(1)?)))
            .map_err(|e| fail()(PgError::new(e)))?;
        Ok(SessionSize {
            messages: count(messages),
            bytes: count(bytes),
        })
    }

    /// Every session with its size and its last write.
    pub(in crate::session) async fn session_infos(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let fail = || self.sql().fail(Step::List, "");
        let rows = self
            .query("", POSTGRES.sessions, &[])
            .await
            .map_err(fail())?;
        rows.iter()
            .map(|row| {
                Ok(SessionInfo {
                    id: row.try_get(0)?,
                    size: SessionSize {
                        messages: count(row.try_get(1)?),
                        bytes: count(row.try_get(2)?),
                    },
                    updated: from_unix_ms(row.try_get(3)?),
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(|e| fail()(PgError::new(e)))
    }

    /// The sessions' totals, and the four tables with their indexes and TOAST for
    /// `disk_bytes`.
    pub(in crate::session) async fn measure_store(&self) -> Result<StoreSize, SessionError> {
        let mut size = StoreSize::of(&self.session_infos().await?);
        let fail = || self.sql().fail(Step::List, "");
        let rows = self.query("", POSTGRES.disk, &[]).await.map_err(fail())?;
        let disk: i64 = rows
            .first()
            .ok_or_else(|| database_error("postgres", Step::List, "", "no row"))?
            .try_get(0)
            .map_err(|e| fail()(PgError::new(e)))?;
        size.disk_bytes = Some(count(disk));
        Ok(size)
    }
}
