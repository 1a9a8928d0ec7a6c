//! Rewriting a JSONL session from a position, crash-safe, at the cost of the tail.
//!
//! A rewrite from position `from` (an edit of the last message, a removed reply) cuts
//! the file at the line where message `from` starts and writes the new tail there. A
//! cut and a write are two steps, so the new tail goes first to a **redo record**
//! beside the session, `.<name>.redo`:
//!
//! ```text
//! 1. write .<name>.redo: "brute-redo 1 <offset> <length> <checksum>\n" + tail; fsync it
//!    and the directory                        (a crash here: the session is untouched,
//!                                              the torn record is thrown away)
//! 2. cut the session at <offset>, write the tail, fsync
//!                                             (a crash here: the next open, or read,
//!                                              finishes it from the record)
//! 3. remove the record; fsync the directory   (so that no later append is undone by
//!                                              a stale record)
//! ```
//!
//! The cost of one rewrite is the tail written twice and four fsyncs (the record, the
//! directory, the session, the directory), whatever the length of the session: an edit
//! of the last message of a 100,000-message session costs what it costs on a
//! ten-message one. A rewrite from position 0 (compaction) replaces the file through a
//! temp file and a rename instead (`SessionFile::rewrite`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::session::error::{SessionError, io_error};
use crate::session::lock::{parent, sibling, sync_dir};

/// The first word of a redo record.
const MAGIC: &str = "brute-redo 1";

/// `.<name>.redo`: the redo record of the session file at `real`.
pub(in crate::session) fn redo_path(real: &Path) -> PathBuf {
    sibling(real, ".", ".redo")
}

/// Steps 1 and 2 of a rewrite of the session at `real` (`path` as given, for errors)
/// from byte `offset`: the record written durably, then `handle` cut there and `bytes`
/// written and fsynced. A failure in step 1 leaves the session untouched and no
/// record; `Err(.., true)` is a failure in step 2, which leaves the record for the
/// next open to finish. Step 3 is [`discard`].
pub(in crate::session) fn cut_and_write(
    real: &Path,
    path: &Path,
    mut handle: &File,
    offset: u64,
    bytes: &[u8],
) -> Result<(), (SessionError, bool)> {
    let redo = redo_path(real);
    write_record(&redo, offset, bytes).map_err(|e| (e, false))?;
    if let Err(e) = sync_dir(&parent(real)) {
        // Not durable, so not done: the session is untouched, and stays as it is.
        let _ = fs::remove_file(&redo);
        return Err((e, false));
    }
    handle
        .set_len(offset)
        .and_then(|()| handle.seek(SeekFrom::Start(offset)))
        .and_then(|_| handle.write_all(bytes))
        .and_then(|()| handle.sync_data())
        .map_err(|e| (io_error(path, "rewrite the end of the file")(e), true))
}

/// Step 1: the record written and fsynced.
fn write_record(redo: &Path, offset: u64, tail: &[u8]) -> Result<(), SessionError> {
    let mut record = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(redo)
        .map_err(io_error(redo, "create the redo record"))?;
    let header = format!(
        "{MAGIC} {offset} {} {:016x}\n",
        tail.len(),
        checksum(offset, tail)
    );
    record
        .write_all(header.as_bytes())
        .and_then(|()| record.write_all(tail))
        .and_then(|()| record.sync_all())
        .map_err(io_error(redo, "write the redo record"))
}

/// Step 3: the record of the session at `real` removed, durably (nothing if none).
pub(in crate::session) fn discard(real: &Path) -> Result<(), SessionError> {
    let redo = redo_path(real);
    match fs::remove_file(&redo) {
        Ok(()) => sync_dir(&parent(real)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(&redo, "remove the redo record")(e)),
    }
}

/// A whole record: where the tail goes and the tail.
struct Record {
    offset: u64,
    tail: Vec<u8>,
}

/// The record of the session at `real`, if there is a whole one (a torn one, from a
/// crash while it was written, is `None`: the session was not touched yet).
fn read_record(real: &Path) -> Result<Option<Record>, SessionError> {
    let redo = redo_path(real);
    let mut bytes = Vec::new();
    match File::open(&redo) {
        Ok(mut f) => f
            .read_to_end(&mut bytes)
            .map_err(io_error(&redo, "read the redo record"))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&redo, "read the redo record")(e)),
    };
    Ok(parse_record(&bytes))
}

fn parse_record(bytes: &[u8]) -> Option<Record> {
    let newline = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let rest = header.strip_prefix(MAGIC)?;
    let mut fields = rest.split_ascii_whitespace();
    let offset: u64 = fields.next()?.parse().ok()?;
    let length: usize = fields.next()?.parse().ok()?;
    let sum = u64::from_str_radix(fields.next()?, 16).ok()?;
    let tail = &bytes[newline + 1..];
    (tail.len() == length && checksum(offset, tail) == sum).then(|| Record {
        offset,
        tail: tail.to_vec(),
    })
}

/// Finishes a rewrite a crash interrupted, on the locked session `file` at `real`
/// (`path` as given, for errors), and removes its record; a torn record is removed.
pub(in crate::session) fn recover(
    real: &Path,
    mut file: &File,
    path: &Path,
) -> Result<(), SessionError> {
    let Some(record) = read_record(real)? else {
        return discard(real);
    };
    let len = file
        .metadata()
        .map_err(io_error(path, "look at the file"))?
        .len();
    if len < record.offset {
        // The cut never made the file shorter than its offset: this record is not of
        // this file (it was replaced meanwhile).
        tracing::warn!(
            brute.session.path = %path.display(),
            "removed a redo record that does not fit the session file"
        );
        return discard(real);
    }
    file.set_len(record.offset)
        .and_then(|()| file.seek(SeekFrom::Start(record.offset)))
        .and_then(|_| file.write_all(&record.tail))
        .and_then(|()| file.sync_data())
        // The load reads from the current position.
        .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
        .map_err(io_error(path, "finish an interrupted rewrite"))?;
    tracing::info!(
        brute.session.path = %path.display(),
        "finished a rewrite of the session that a crash interrupted"
    );
    discard(real)
}

/// `bytes`, the session at `real` as read, with a whole redo record applied: what the
/// file holds once the rewrite it records is finished.
pub(in crate::session) fn apply_in_memory(
    real: &Path,
    bytes: &mut Vec<u8>,
) -> Result<(), SessionError> {
    if let Some(record) = read_record(real)?
        && let Ok(offset) = usize::try_from(record.offset)
        && offset <= bytes.len()
    {
        bytes.truncate(offset);
        bytes.extend_from_slice(&record.tail);
    }
    Ok(())
}

/// FNV-1a over the offset and the tail: tells a whole record from a torn one (not a
/// defence against an attacker who can write the session's directory).
fn checksum(offset: u64, tail: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in offset.to_le_bytes().iter().chain(tail) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::session::SessionFile;

    fn contents(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.content.as_str()).collect()
    }

    fn line(message: &Message) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(message).expect("serialisable");
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn a_rewrite_from_a_position_keeps_the_head_and_leaves_no_record() {
        let dir = tempfile_dir("keeps");
        let path = dir.join("s.jsonl");
        let (mut file, _) = SessionFile::open(&path).expect("opened");
        let three = [
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        file.append(&three).expect("appended");
        file.rewrite_from(1, line(&Message::assistant("B")))
            .expect("rewritten");
        file.append(&[Message::user("d")]).expect("appended after");
        drop(file);
        assert_eq!(
            contents(&SessionFile::read(&path).expect("read")),
            ["a", "B", "d"]
        );
        assert!(!redo_path(&path).exists());
        fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_rewrite_cut_short_by_a_crash_is_finished_by_the_next_open_and_read() {
        let (dir, path, offset) = two_messages("crash");
        // The crash: the record is durable, the file cut but its tail not written.
        let tail = line(&Message::assistant("B"));
        write_record(&redo_path(&path), offset, &tail).expect("record");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(offset))
            .expect("cut");
        assert_eq!(
            contents(&SessionFile::read(&path).expect("read")),
            ["a", "B"]
        );
        let (_file, loaded) = SessionFile::open(&path).expect("recovered");
        assert_eq!(contents(&loaded), ["a", "B"]);
        assert!(!redo_path(&path).exists());
        fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_record_torn_by_a_crash_leaves_the_session_as_it_was() {
        let (dir, path, offset) = two_messages("torn");
        let tail = line(&Message::assistant("B"));
        write_record(&redo_path(&path), offset, &tail).expect("record");
        let redo = redo_path(&path);
        let whole = fs::read(&redo).expect("record read");
        fs::write(&redo, &whole[..whole.len() - 3]).expect("torn");
        let (_file, loaded) = SessionFile::open(&path).expect("opened");
        assert_eq!(contents(&loaded), ["a", "b"]);
        assert!(!redo.exists());
        fs::remove_dir_all(&dir).ok();
    }

    /// A session file of "a" and "b" in a fresh directory: the directory, the file, and
    /// the offset where "b" starts.
    fn two_messages(name: &str) -> (PathBuf, PathBuf, u64) {
        let dir = tempfile_dir(name);
        let path = dir.join("s.jsonl");
        let (mut file, _) = SessionFile::open(&path).expect("opened");
        file.append(&[Message::user("a"), Message::assistant("b")])
            .expect("appended");
        let offset = file.starts[1];
        drop(file);
        (dir, path, offset)
    }

    #[test]
    fn a_record_written_before_the_cut_is_finished_and_one_past_the_end_thrown_away() {
        let (dir, path, offset) = two_messages("before-cut");
        let tail = line(&Message::assistant("B"));
        write_record(&redo_path(&path), offset, &tail).expect("record");
        let (file, loaded) = SessionFile::open(&path).expect("recovered");
        assert_eq!(contents(&loaded), ["a", "B"]);
        assert!(!redo_path(&path).exists());
        drop(file);
        // A record whose offset is past the end is of a file replaced meanwhile.
        let len = fs::metadata(&path).expect("metadata").len();
        write_record(&redo_path(&path), len + 5, &tail).expect("record");
        let (_file, loaded) = SessionFile::open(&path).expect("opened");
        assert_eq!(contents(&loaded), ["a", "B"]);
        assert_eq!(fs::metadata(&path).expect("metadata").len(), len);
        assert!(!redo_path(&path).exists());
        fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_redo_record_that_cannot_be_opened_or_removed_is_an_error() {
        // Neither a permission bit (root passes every one) nor a missing file: a
        // socket where the record should be cannot be opened (ENXIO), a directory
        // cannot be removed as a file (EISDIR).
        let (dir, path, _) = two_messages("unopenable");
        let socket = std::os::unix::net::UnixListener::bind(redo_path(&path)).expect("bound");
        let refused = SessionFile::read(&path).err().map(|e| e.to_string());
        assert!(
            refused
                .as_ref()
                .is_some_and(|e| e.contains("read the redo record")),
            "{refused:?}"
        );
        drop(socket);
        fs::remove_file(redo_path(&path)).expect("socket removed");
        fs::create_dir(redo_path(&path)).expect("a directory");
        let refused = discard(&path).err().map(|e| e.to_string());
        assert!(
            refused
                .as_ref()
                .is_some_and(|e| e.contains("remove the redo record")),
            "{refused:?}"
        );
        fs::remove_dir_all(&dir).ok();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("brute-tail-{name}-{}", std::process::id()));
        fs::remove_dir_all(&dir).ok();
        dir
    }

    #[test]
    fn a_torn_record_is_no_record() {
        let tail = b"{\"role\":\"user\",\"content\":\"x\"}\n";
        let header = format!("{MAGIC} 10 {} {:016x}\n", tail.len(), checksum(10, tail));
        let whole = [header.as_bytes(), tail].concat();
        let record = parse_record(&whole).expect("a whole record");
        assert_eq!((record.offset, record.tail.as_slice()), (10, &tail[..]));
        for cut in 0..whole.len() {
            assert!(parse_record(&whole[..cut]).is_none(), "torn at {cut}");
        }
        let mut flipped = whole.clone();
        let last = flipped.len() - 2;
        flipped[last] ^= 1;
        assert!(parse_record(&flipped).is_none());
    }
}
