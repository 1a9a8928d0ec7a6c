//! Recording the raw responses of an HTTP model for [`Replay`](crate::providers::Replay).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use crate::error::ModelError;

/// Appends the raw responses of a provider to a JSONL file that
/// [`Replay`](crate::providers::Replay) plays back: `{"provider":..,"body":{..}}` for a
/// JSON response, `{"provider":..,"sse":".."}` for a stream.
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    path: Arc<PathBuf>,
    lock: Arc<Mutex<()>>,
}

impl Recorder {
    pub(crate) fn new(path: impl AsRef<Path>) -> Self {
        Recorder {
            path: Arc::new(path.as_ref().to_path_buf()),
            lock: Arc::default(),
        }
    }

    /// Records a JSON response body.
    pub(crate) fn body(&self, provider: &str, body: &[u8]) -> Result<(), ModelError> {
        let body: &RawValue = serde_json::from_slice(body)
            .map_err(|e| ModelError::Malformed(format!("recording: the body is not JSON: {e}")))?;
        let line = serde_json::json!({ "provider": provider, "body": body });
        self.append(&line)
    }

    /// Records the text of an event stream.
    pub(crate) fn sse(&self, provider: &str, text: &[u8]) -> Result<(), ModelError> {
        let line =
            serde_json::json!({ "provider": provider, "sse": String::from_utf8_lossy(text) });
        self.append(&line)
    }

    fn append(&self, line: &serde_json::Value) -> Result<(), ModelError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = line.to_string();
        text.push('\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*self.path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| ModelError::Rejected(format!("recording to {}: {e}", self.path.display())))
    }
}
