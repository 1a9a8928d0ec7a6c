//! Image files for `read`: recognised by their first bytes and returned as an image
//! part, within a size limit every provider accepts.

use std::io::Read as _;

use crate::message::Part;
use crate::tools::error::quoted;
use crate::tools::{ToolError, ToolOutput};

/// The largest image file `read` returns, in bytes: 3,932,160 (3.75 MiB), whose base64
/// text is 5 MiB, Anthropic's limit for one image and the smallest of the providers
/// brute speaks (OpenAI and Gemini take 20 MB).
pub(super) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;

/// The media type of an image whose file starts with `head`: PNG, JPEG, GIF or WebP,
/// the formats every provider takes, by their magic bytes (not by the file's name).
pub(super) fn media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The image file `raw`, whose first bytes `head` have been read from `file` already,
/// as an output with one image part and a line saying what it is.
pub(super) fn read_image(
    media_type: &str,
    head: Vec<u8>,
    file: std::fs::File,
    raw: &str,
) -> Result<ToolOutput, ToolError> {
    let io = |e| ToolError::io("cannot read", raw, e);
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(too_large(media_type, size, raw));
    }
    let mut bytes = head;
    // One byte past the limit is read, so a file that grew since its size was taken is
    // still refused rather than cut.
    file.take(MAX_IMAGE_BYTES + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large(media_type, bytes.len() as u64, raw));
    }
    let part = Part::image(media_type, &bytes)
        .map_err(|e| ToolError::failed(format!("{}: {e}", quoted(raw))))?;
    Ok(ToolOutput::text(format!(
        "Image {} ({media_type}, {} bytes).",
        quoted(raw),
        bytes.len()
    ))
    .with_part(part))
}

fn too_large(media_type: &str, size: u64, raw: &str) -> ToolError {
    ToolError::failed(format!(
        "Cannot show image {} ({media_type}, {size} bytes): read shows images of at most {MAX_IMAGE_BYTES} bytes",
        quoted(raw)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a.."), Some("image/gif"));
        assert_eq!(media_type(b"GIF87a.."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(media_type(b"\x89PNG"), None);
        assert_eq!(media_type(b"%PDF-1.7"), None);
    }

    #[test]
    fn the_limit_is_five_mebibytes_of_base64() {
        assert_eq!(MAX_IMAGE_BYTES.div_ceil(3) * 4, 5 * 1024 * 1024);
    }
}
