//! Content parts: the images and documents a message carries beside its text.
//!
//! A [`Part`] is an image or a document, given by URL or by its bytes with a media
//! type ([`Source`]). Bytes are held base64-encoded ([`Data`]), encoded once when the
//! part is made: the session line and every request body use that text as it is, so a
//! long conversation with a PDF does not encode the PDF again on every model call.
//!
//! The JSON form (the session format) is one flat object per part:
//!
//! ```text
//! {"type":"image","url":"https://example.com/cat.png"}
//! {"type":"image","media_type":"image/png","data":"iVBORw0KGgo="}
//! {"type":"document","media_type":"application/pdf","data":"JVBERi0x","title":"Q3 report"}
//! ```

use std::fmt;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// An image or a document in a [`Message`](crate::Message), beside its text.
///
/// ```
/// use brute::Message;
/// use brute::message::Part;
///
/// let png = [0x89, b'P', b'N', b'G'];
/// let message = Message::user("What is in this picture?")
///     .with_part(Part::image("image/png", &png)?)
///     .with_part(Part::image_url("https://example.com/cat.jpg"));
/// assert_eq!(message.parts().len(), 2);
/// assert_eq!(message.parts()[0].data().map(|d| d.to_bytes()), Some(png.to_vec()));
/// # Ok::<(), brute::message::PartError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PartForm", into = "PartForm")]
pub enum Part {
    /// An image (PNG, JPEG, GIF or WebP for both providers).
    Image(Source),
    /// A document (PDF), with an optional title the provider shows the model.
    Document {
        /// Where the document is.
        source: Source,
        /// A title or file name, if any.
        title: Option<String>,
    },
}

impl Part {
    /// An image from its bytes and media type (`image/png`, `image/jpeg`, ...).
    pub fn image(media_type: impl AsRef<str>, bytes: &[u8]) -> Result<Self, PartError> {
        Ok(Part::Image(Source::Data(Data::from_bytes(
            media_type, bytes,
        )?)))
    }

    /// An image the provider fetches from `url` (an `https:` address or a `data:` URL).
    pub fn image_url(url: impl Into<String>) -> Self {
        Part::Image(Source::Url(url.into()))
    }

    /// A PDF document from its bytes.
    pub fn pdf(bytes: &[u8]) -> Self {
        Part::Document {
            source: Source::Data(Data::encode("application/pdf", bytes)),
            title: None,
        }
    }

    /// A document from its bytes and media type.
    pub fn document(media_type: impl AsRef<str>, bytes: &[u8]) -> Result<Self, PartError> {
        Ok(Part::Document {
            source: Source::Data(Data::from_bytes(media_type, bytes)?),
            title: None,
        })
    }

    /// A document the provider fetches from `url` (Anthropic only: the Chat Completions
    /// API takes documents by their bytes).
    pub fn document_url(url: impl Into<String>) -> Self {
        Part::Document {
            source: Source::Url(url.into()),
            title: None,
        }
    }

    /// The same part with `title` (documents only; an image is returned unchanged).
    pub fn titled(self, title: impl Into<String>) -> Self {
        match self {
            Part::Document { source, .. } => Part::Document {
                source,
                title: Some(title.into()),
            },
            image => image,
        }
    }

    /// Where the part is.
    pub fn source(&self) -> &Source {
        match self {
            Part::Image(source) | Part::Document { source, .. } => source,
        }
    }

    /// The inline bytes, when the part is not given by URL.
    pub fn data(&self) -> Option<&Data> {
        match self.source() {
            Source::Data(data) => Some(data),
            Source::Url(_) => None,
        }
    }

    /// `"image"` or `"document"`, as in the JSON form and in error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Image(_) => "image",
            Part::Document { .. } => "document",
        }
    }
}

/// Where an image or a document is: at a URL, or inline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A URL the provider fetches.
    Url(String),
    /// The bytes themselves, with their media type.
    Data(Data),
}

/// Inline bytes with their media type, held base64-encoded (standard alphabet, padded).
/// Cloning is cheap: the text is shared.
#[derive(Clone, PartialEq, Eq)]
pub struct Data {
    media_type: Arc<str>,
    base64: Arc<str>,
}

impl Data {
    /// Encodes `bytes` of `media_type` (`type/subtype`).
    pub fn from_bytes(media_type: impl AsRef<str>, bytes: &[u8]) -> Result<Self, PartError> {
        check_media_type(media_type.as_ref())?;
        Ok(Self::encode(media_type.as_ref(), bytes))
    }

    /// Takes already-encoded `base64` text of `media_type`, checking that it is
    /// base64 (standard alphabet, padded) without decoding it.
    pub fn from_base64(
        media_type: impl AsRef<str>,
        base64: impl Into<Arc<str>>,
    ) -> Result<Self, PartError> {
        check_media_type(media_type.as_ref())?;
        let base64 = base64.into();
        check_base64(&base64)?;
        Ok(Data {
            media_type: Arc::from(media_type.as_ref()),
            base64,
        })
    }

    fn encode(media_type: &str, bytes: &[u8]) -> Self {
        Data {
            media_type: Arc::from(media_type),
            base64: Arc::from(STANDARD.encode(bytes)),
        }
    }

    /// The media type (`image/png`, `application/pdf`).
    pub fn media_type(&self) -> &str {
        &self.media_type
    }

    /// The bytes as base64 text.
    pub fn base64(&self) -> &str {
        &self.base64
    }

    /// The bytes, decoded.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Checked at construction: every `Data` holds valid base64.
        STANDARD.decode(self.base64.as_bytes()).unwrap_or_default()
    }

    /// The bytes as a `data:` URL, displayed without building it in memory first.
    pub fn display_url(&self) -> impl fmt::Display + '_ {
        struct DataUrl<'a>(&'a Data);
        impl fmt::Display for DataUrl<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "data:{};base64,{}", self.0.media_type, self.0.base64)
            }
        }
        DataUrl(self)
    }
}

impl fmt::Debug for Data {
    /// The media type and the size, not the bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Data")
            .field("media_type", &self.media_type)
            .field("base64_len", &self.base64.len())
            .finish()
    }
}

/// Why a part could not be made or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartError {
    /// The media type is not of the form `type/subtype`.
    #[error("the media type {0:?} is not of the form `type/subtype` (`image/png`)")]
    MediaType(String),
    /// The inline data is not standard padded base64.
    #[error("the data is not base64 (standard alphabet, padded): {0}")]
    Base64(String),
    /// A part's JSON form names neither a `url` nor `media_type` and `data`, or both.
    #[error("a {kind} part needs either `url` or both `media_type` and `data`")]
    Source {
        /// `image` or `document`.
        kind: &'static str,
    },
}

fn check_media_type(media_type: &str) -> Result<(), PartError> {
    let ok = media_type.split_once('/').is_some_and(|(t, s)| {
        let token = |x: &str| {
            !x.is_empty()
                && x.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
        };
        token(t) && token(s)
    });
    if ok {
        Ok(())
    } else {
        Err(PartError::MediaType(media_type.to_owned()))
    }
}

/// Standard padded base64, checked byte by byte (no allocation).
fn check_base64(text: &str) -> Result<(), PartError> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return Err(PartError::Base64(format!(
            "its length {} is not a multiple of 4",
            bytes.len()
        )));
    }
    let body = bytes.len()
        - bytes
            .iter()
            .rev()
            .take(2)
            .take_while(|&&b| b == b'=')
            .count();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    match bytes[..body].iter().position(|&b| !alphabet(b)) {
        Some(at) => Err(PartError::Base64(format!(
            "byte {at} is {:?}",
            char::from(bytes[at])
        ))),
        None => Ok(()),
    }
}

/// The flat JSON form of a part.
#[derive(Serialize, Deserialize)]
struct PartForm {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Image,
    Document,
}

impl TryFrom<PartForm> for Part {
    type Error = PartError;

    fn try_from(form: PartForm) -> Result<Self, PartError> {
        let kind = match form.kind {
            Kind::Image => "image",
            Kind::Document => "document",
        };
        let source = match (form.url, form.media_type, form.data) {
            (Some(url), None, None) => Source::Url(url),
            (None, Some(media_type), Some(data)) => {
                Source::Data(Data::from_base64(&*media_type, data)?)
            }
            _ => return Err(PartError::Source { kind }),
        };
        Ok(match form.kind {
            Kind::Image => Part::Image(source),
            Kind::Document => Part::Document {
                source,
                title: form.title,
            },
        })
    }
}

impl From<Part> for PartForm {
    fn from(part: Part) -> Self {
        let (kind, source, title) = match part {
            Part::Image(source) => (Kind::Image, source, None),
            Part::Document { source, title } => (Kind::Document, source, title),
        };
        let (url, media_type, data) = match source {
            Source::Url(url) => (Some(url), None, None),
            Source::Data(data) => (None, Some(data.media_type), Some(data.base64)),
        };
        PartForm {
            kind,
            url,
            media_type,
            data,
            title,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_checked_without_decoding() {
        assert!(check_base64("").is_ok());
        assert!(check_base64("QUJD").is_ok());
        assert!(check_base64("QUI=").is_ok());
        assert!(check_base64("QQ==").is_ok());
        assert!(check_base64("QQ=").is_err());
        assert!(check_base64("Q===").is_err());
        assert!(check_base64("QU*D").is_err());
    }

    #[test]
    fn media_types_need_a_type_and_a_subtype() {
        assert!(check_media_type("image/png").is_ok());
        assert!(check_media_type("application/vnd.ms-excel").is_ok());
        assert!(check_media_type("png").is_err());
        assert!(check_media_type("image/").is_err());
        assert!(check_media_type("image/png; x").is_err());
    }
}
