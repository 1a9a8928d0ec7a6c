//! The files beneath a tool root as MCP resources: listed with `resources/list`, read
//! with `resources/read`, confined to the root as brute's file tools are.
//!
//! A resource's URI is `root:///` and its path relative to the root, percent-encoded
//! (`root:///src/main.rs`): a client never sees where the root is on the server.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use brute::tools::ToolContext;
use cap_std::fs::Dir;
use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents};

/// The scheme and authority of every file resource.
pub(crate) const SCHEME: &str = "root:///";

/// Most bytes one `resources/read` returns; a larger file is refused.
const MAX_READ: u64 = 8 * 1024 * 1024;

/// Most resources one `resources/list` page holds; the rest follow with a cursor.
pub(crate) const PAGE: usize = 200;

/// Most entries a listing walks; a larger tree is listed in part.
const MAX_LISTED: usize = 10_000;

/// The files beneath one tool root, read through the root's directory handle.
pub(crate) struct Files {
    context: Arc<ToolContext>,
    /// The root, opened once: every read resolves beneath it in the kernel.
    dir: Dir,
}

impl Files {
    /// The files beneath `context`'s root.
    pub(crate) fn new(context: Arc<ToolContext>) -> std::io::Result<Self> {
        let dir = Dir::open_ambient_dir(context.sandbox().root(), cap_std::ambient_authority())?;
        Ok(Self { context, dir })
    }

    /// Every file's path relative to the root, sorted; hidden entries (a name starting
    /// with `.`) and links that lead outside the root are left out.
    pub(crate) fn list(&self) -> Vec<Resource> {
        let mut paths = Vec::new();
        let mut pending = vec![String::new()];
        while let Some(directory) = pending.pop() {
            let entries = match directory.is_empty() {
                true => self.dir.entries(),
                false => self.dir.read_dir(&directory),
            };
            let Ok(entries) = entries else { continue };
            for entry in entries.flatten() {
                if paths.len() >= MAX_LISTED {
                    break;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                let path = match directory.is_empty() {
                    true => name,
                    false => format!("{directory}/{name}"),
                };
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    pending.push(path);
                } else if self.context.resolve(&path).is_ok()
                    && self.dir.metadata(&path).is_ok_and(|m| m.is_file())
                {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        paths
            .into_iter()
            .map(|path| {
                let resource = Resource::new(uri(&path), path.clone());
                match mime_type(&path) {
                    Some(mime) => resource.with_mime_type(mime),
                    None => resource,
                }
            })
            .collect()
    }

    /// The contents of the resource at `uri`: text (with the context's secrets
    /// redacted) when the file is UTF-8, base64 otherwise. A URI that is not a
    /// `root:///` path, a path that leaves the root (`..`, a link to outside), a
    /// missing file or a directory is an error naming the URI, never the root.
    pub(crate) fn read(&self, uri: &str) -> Result<ResourceContents, ErrorData> {
        let not_found = |why: &str| {
            ErrorData::resource_not_found(
                format!("resource `{}`: {why}", brute::tools::quoted(uri)),
                None,
            )
        };
        let path = path_of(uri).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "resource `{}`: not a file of this server (its URIs start with `{SCHEME}`)",
                    brute::tools::quoted(uri)
                ),
                None,
            )
        })?;
        let resolved = self
            .context
            .resolve(&path)
            .map_err(|_| not_found("the path leaves the tool root"))?;
        let relative = resolved
            .strip_prefix(self.context.sandbox().root())
            .map_err(|_| not_found("the path leaves the tool root"))?;
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let file = self
            .dir
            .open(relative)
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => not_found("no such file"),
                _ => not_found("cannot be opened beneath the tool root"),
            })?;
        let metadata = file
            .metadata()
            .map_err(|_| not_found("cannot be opened beneath the tool root"))?;
        if !metadata.is_file() {
            return Err(not_found("not a file"));
        }
        if metadata.len() > MAX_READ {
            return Err(not_found(&format!(
                "the file has {} bytes, more than the {MAX_READ} a read returns",
                metadata.len()
            )));
        }
        let mut bytes = Vec::new();
        file.into_std()
            .take(MAX_READ)
            .read_to_end(&mut bytes)
            .map_err(|_| not_found("cannot be read"))?;
        let mime = mime_type(&path);
        Ok(match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(self.context.redact(&text), uri)
                .with_mime_type(mime.unwrap_or("text/plain")),
            Err(binary) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(binary.as_bytes());
                ResourceContents::blob(blob, uri)
                    .with_mime_type(mime.unwrap_or("application/octet-stream"))
            }
        })
    }
}

/// The URI of the file at `path` (relative to the root, `/`-separated).
fn uri(path: &str) -> String {
    let mut uri = String::from(SCHEME);
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path relative to the root that `uri` names, percent-decoded; `None` when it is
/// not a `root:///` URI or its encoding is broken.
fn path_of(uri: &str) -> Option<String> {
    let encoded = uri.strip_prefix(SCHEME)?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    let path = String::from_utf8(bytes).ok()?;
    (!path.is_empty() && !path.contains('\0')).then_some(path)
}

/// The media type a file's extension names, for the few kinds clients show.
fn mime_type(path: &str) -> Option<&'static str> {
    let extension = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "txt" | "rs" | "toml" | "py" | "sh" | "c" | "h" | "go" | "java" | "ts" => "text/plain",
        "md" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_survives_its_uri() {
        for path in ["notes.txt", "src/main.rs", "a b/ü%#?.md"] {
            let uri = uri(path);
            assert!(!uri[SCHEME.len()..].contains([' ', '#', '?']), "{uri}");
            assert_eq!(path_of(&uri).as_deref(), Some(path));
        }
    }

    #[test]
    fn a_foreign_or_broken_uri_names_no_file() {
        for uri in [
            "file:///etc/passwd",
            "root:///",
            "root:///a%2",
            "root:///%ff",
            "root:///a%00",
        ] {
            assert_eq!(path_of(uri), None, "{uri}");
        }
    }
}
