//! What the database stores need for sizes and retention: the `brute_activity` table
//! (the time of each session's last write, kept by triggers, so no write of the
//! stores changes) and the statements that read sizes without loading a message.

/// SQLite: the activity table and its triggers (milliseconds since the epoch).
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS brute_activity (
        session TEXT PRIMARY KEY,
        at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS brute_activity_messages AFTER INSERT ON brute_messages BEGIN
        INSERT OR REPLACE INTO brute_activity (session, at)
        VALUES (NEW.session, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
    END;
    CREATE TRIGGER IF NOT EXISTS brute_activity_sessions AFTER INSERT ON brute_sessions BEGIN
        INSERT OR REPLACE INTO brute_activity (session, at)
        VALUES (NEW.id, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
    END;
    CREATE TRIGGER IF NOT EXISTS brute_activity_gone AFTER DELETE ON brute_sessions BEGIN
        DELETE FROM brute_activity WHERE session = OLD.id;
    END;";

/// PostgreSQL: the activity table and its statement-level triggers, created once
/// (under the schema's advisory lock).
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_SCHEMA: &str = "
    SELECT pg_advisory_xact_lock(7305617724130431);
    CREATE TABLE IF NOT EXISTS brute_activity (
        session TEXT PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL
    );
    CREATE OR REPLACE FUNCTION brute_activity_messages() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
        INSERT INTO brute_activity (session, at)
        SELECT DISTINCT session, now() FROM brute_new_messages
        ON CONFLICT (session) DO UPDATE SET at = excluded.at;
        RETURN NULL;
    END $f$;
    CREATE OR REPLACE FUNCTION brute_activity_sessions() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
        INSERT INTO brute_activity (session, at)
        SELECT DISTINCT id, now() FROM brute_new_sessions
        ON CONFLICT (session) DO UPDATE SET at = excluded.at;
        RETURN NULL;
    END $f$;
    CREATE OR REPLACE FUNCTION brute_activity_gone() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
        DELETE FROM brute_activity a USING brute_old_sessions o WHERE a.session = o.id;
        RETURN NULL;
    END $f$;
    DO $d$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'brute_activity_messages') THEN
            CREATE TRIGGER brute_activity_messages AFTER INSERT ON brute_messages
            REFERENCING NEW TABLE AS brute_new_messages
            FOR EACH STATEMENT EXECUTE FUNCTION brute_activity_messages();
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'brute_activity_sessions') THEN
            CREATE TRIGGER brute_activity_sessions AFTER INSERT ON brute_sessions
            REFERENCING NEW TABLE AS brute_new_sessions
            FOR EACH STATEMENT EXECUTE FUNCTION brute_activity_sessions();
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'brute_activity_gone') THEN
            CREATE TRIGGER brute_activity_gone AFTER DELETE ON brute_sessions
            REFERENCING OLD TABLE AS brute_old_sessions
            FOR EACH STATEMENT EXECUTE FUNCTION brute_activity_gone();
        END IF;
    END $d$;";

/// Creates the activity table and its triggers if missing, in one transaction.
#[cfg(feature = "postgres")]
pub(crate) async fn create_activity(
    client: &mut tokio_postgres::Client,
) -> Result<(), crate::session::sql::pg_conn::PgError> {
    let setup = client.transaction().await?;
    setup.batch_execute(POSTGRES_SCHEMA).await?;
    setup.commit().await?;
    Ok(())
}

/// The statements of one dialect.
pub(crate) struct SizeSql {
    /// The messages and bytes of session `$1`.
    pub(crate) size: &'static str,
    /// Every session: id, messages, bytes, last write in ms since the epoch (or NULL).
    pub(crate) sessions: &'static str,
    /// The bytes the store takes on disk.
    pub(crate) disk: &'static str,
}

/// SQLite's.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: SizeSql = SizeSql {
    size: "SELECT count(*), coalesce(sum(length(CAST(body AS BLOB))), 0)
           FROM brute_messages WHERE session = ?1",
    sessions: "SELECT s.id, count(m.seq), coalesce(sum(length(CAST(m.body AS BLOB))), 0), a.at
               FROM brute_sessions s
               LEFT JOIN brute_messages m ON m.session = s.id
               LEFT JOIN brute_activity a ON a.session = s.id
               GROUP BY s.id, a.at ORDER BY s.id",
    disk: "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
};

/// PostgreSQL's.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: SizeSql = SizeSql {
    size: "SELECT count(*)::bigint, coalesce(sum(octet_length(body)), 0)::bigint
           FROM brute_messages WHERE session = $1",
    sessions: "SELECT s.id, count(m.seq)::bigint, coalesce(sum(octet_length(m.body)), 0)::bigint,
                      (extract(epoch FROM a.at) * 1000)::bigint
               FROM brute_sessions s
               LEFT JOIN brute_messages m ON m.session = s.id
               LEFT JOIN brute_activity a ON a.session = s.id
               GROUP BY s.id, a.at ORDER BY s.id",
    disk: "SELECT (pg_total_relation_size('brute_messages') + pg_total_relation_size('brute_sessions')
                   + pg_total_relation_size('brute_leases') + pg_total_relation_size('brute_activity'))::bigint",
};

/// A count or a byte sum of the database as the sizes take it.
pub(crate) fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
