//! The sizes and times of the JSONL store's files, read without parsing a message.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use crate::session::admin::retention::SessionSize;
use crate::session::error::{SessionError, io_error};

/// The size of the session file at `path` (its lines and length) and its
/// modification time; an absent file is empty, with no time.
pub(crate) fn file_info(path: &Path) -> Result<(SessionSize, Option<SystemTime>), SessionError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((SessionSize::default(), None)),
        Err(e) => return Err(io_error(path, "open the file to measure it")(e)),
    };
    let meta = file
        .metadata()
        .map_err(io_error(path, "read the file's metadata"))?;
    let mut buffer = vec![0u8; 64 * 1024];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(path, "read the file to measure it")(e)),
        };
        lines += buffer[..read].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buffer[read - 1];
    }
    // An unterminated last line is a message too (or what is left of one).
    if last != b'\n' {
        lines += 1;
    }
    let size = SessionSize {
        messages: lines,
        bytes: meta.len(),
    };
    Ok((size, meta.modified().ok()))
}

/// The bytes of every file in `dir` (locks and rewrite records included); an absent
/// directory takes none.
pub(crate) fn dir_bytes(dir: &Path) -> Result<u64, SessionError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_error(dir, "list the directory")(e)),
    };
    let mut bytes = 0;
    for entry in entries {
        let entry = entry.map_err(io_error(dir, "list the directory"))?;
        if let Ok(meta) = entry.metadata()
            && meta.is_file()
        {
            bytes += meta.len();
        }
    }
    Ok(bytes)
}
