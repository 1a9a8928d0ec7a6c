//! Token estimates of images and documents ([`Part`]s), for [`Heuristic`](super::Heuristic).
//!
//! Providers bill an image by its size in pixels and a PDF by its pages, not by its
//! bytes. An image costs about `width × height / 750` tokens once scaled to fit a long
//! edge of 1,568 pixels, and never more than about 1,600 (Anthropic's published rule;
//! OpenAI's tiles cost less, so this errs towards compacting early). A PDF page costs
//! about 3,000 (1,500 to 3,000 tokens of text, and the page seen as an image).
//!
//! What brute cannot see is counted at the top of that range: an image given by URL, or
//! whose header it cannot read, as a full-size image; a document given by URL as one
//! page. A [`TokenEstimator`](super::TokenEstimator) of your own can do better.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::message::{Data, Part, Source};

/// Most tokens an image costs: providers scale larger images down to this.
pub(crate) const MAX_IMAGE_TOKENS: usize = 1_600;
/// Tokens of one PDF page: its text and its picture.
pub(crate) const PDF_PAGE_TOKENS: usize = 3_000;
/// Longest edge, in pixels, an image is scaled down to before it is counted.
const MAX_EDGE: u64 = 1_568;
/// Pixels per token.
const PIXELS_PER_TOKEN: u64 = 750;
/// Bytes of PDF per page, when the file names no page count it can be read from.
const PDF_BYTES_PER_PAGE: usize = 50_000;
/// Most pages a PDF is counted with: more than any provider takes, and a page count
/// written in the file (which anyone can write) cannot overflow the estimate.
const MAX_PDF_PAGES: usize = 10_000;
/// Bytes of an image decoded to find its size: every format's header is near the
/// start (a JPEG's frame header after its metadata, which is rarely longer).
const IMAGE_HEAD: usize = 64 * 1024;

/// Estimated tokens of `part`.
pub(crate) fn part_tokens(part: &Part) -> usize {
    match part {
        Part::Image(Source::Data(data)) => stored_image_size(data)
            .map(|(width, height)| image_tokens(width, height))
            .unwrap_or(MAX_IMAGE_TOKENS),
        Part::Image(Source::Url(_)) => MAX_IMAGE_TOKENS,
        Part::Document {
            source: Source::Data(data),
            ..
        } if data.media_type() == "application/pdf" => {
            pdf_pages(&data.to_bytes()).min(MAX_PDF_PAGES) * PDF_PAGE_TOKENS
        }
        // Another kind of document (plain text): about four bytes a token, as text.
        Part::Document {
            source: Source::Data(data),
            ..
        } => decoded_len(data).div_ceil(4),
        Part::Document {
            source: Source::Url(_),
            ..
        } => PDF_PAGE_TOKENS,
    }
}

/// Tokens of a `width × height` image: scaled to fit the longest edge, then by area,
/// at most [`MAX_IMAGE_TOKENS`].
fn image_tokens(width: u32, height: u32) -> usize {
    let (mut width, mut height) = (u64::from(width), u64::from(height));
    let long = width.max(height);
    if long > MAX_EDGE {
        width = (width * MAX_EDGE).div_ceil(long);
        height = (height * MAX_EDGE).div_ceil(long);
    }
    let tokens = (width * height).div_ceil(PIXELS_PER_TOKEN);
    usize::try_from(tokens).map_or(MAX_IMAGE_TOKENS, |t| t.clamp(1, MAX_IMAGE_TOKENS))
}

/// The size of an inline image, decoding only its first [`IMAGE_HEAD`] bytes, and the
/// rest only when its header is further in (a JPEG behind long metadata).
fn stored_image_size(data: &Data) -> Option<(u32, u32)> {
    let text = data.base64();
    // Whole groups of four characters: they decode alone.
    let chars = (IMAGE_HEAD.div_ceil(3) * 4).min(text.len());
    let head = STANDARD.decode(&text[..chars]).ok()?;
    image_size(&head).or_else(|| {
        (chars < text.len())
            .then(|| image_size(&data.to_bytes()))
            .flatten()
    })
}

/// How many bytes `data` holds, from its base64 text, without decoding it.
fn decoded_len(data: &Data) -> usize {
    let text = data.base64();
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding)
}

/// Width and height from the header of a PNG, GIF, JPEG or WebP image.
fn image_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let le16 = |at: usize| {
        Some(u32::from(u16::from_le_bytes(
            bytes.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    let le24 = |at: usize| {
        let b = bytes.get(at..at + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        return Some((be32(16)?, be32(20)?));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return Some((le16(6)?, le16(8)?));
    }
    if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        return match bytes.get(12..16)? {
            // Lossy: 14-bit sizes after the frame's start code.
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            // Lossless: two 14-bit sizes, minus one, packed after the signature byte.
            b"VP8L" => {
                let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            // Extended: 24-bit sizes, minus one.
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        };
    }
    if bytes.starts_with(&[0xff, 0xd8]) {
        return jpeg_size(bytes);
    }
    None
}

/// Width and height from a JPEG's start-of-frame segment.
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // Each segment: 0xff, a marker, then a big-endian length that counts itself.
        while *bytes.get(at)? == 0xff && *bytes.get(at + 1)? == 0xff {
            at += 1;
        }
        if *bytes.get(at)? != 0xff {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        let length = usize::from(u16::from_be_bytes(
            bytes.get(at + 2..at + 4)?.try_into().ok()?,
        ));
        // Start of frame: every 0xc0..=0xcf but the huffman (c4), arithmetic (cc) and
        // JPEG-extension (c8) tables.
        if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let height = u16::from_be_bytes(bytes.get(at + 5..at + 7)?.try_into().ok()?);
            let width = u16::from_be_bytes(bytes.get(at + 7..at + 9)?.try_into().ok()?);
            return Some((u32::from(width), u32::from(height)));
        }
        at += 2 + length;
    }
}

/// Pages of a PDF: its page objects, or the page count of its page tree, whichever is
/// larger (either may sit in a compressed object stream that cannot be read without
/// inflating it); failing both, one page per 50 KB.
fn pdf_pages(bytes: &[u8]) -> usize {
    let mut objects = 0;
    let mut count = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"/Type") {
        at += found + b"/Type".len();
        let rest = &bytes[at..];
        let name = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|skip| &rest[skip..]);
        if let Some(name) = name
            && name.starts_with(b"/Page")
            && !name.get(5).is_some_and(|b| b.is_ascii_alphanumeric())
        {
            objects += 1;
        }
    }
    at = 0;
    while let Some(found) = find(&bytes[at..], b"/Count") {
        at += found + b"/Count".len();
        let digits: Vec<u8> = bytes[at..]
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take_while(|b| b.is_ascii_digit())
            .copied()
            .collect();
        let n = std::str::from_utf8(&digits)
            .ok()
            .and_then(|d| d.parse::<usize>().ok());
        count = count.max(n.unwrap_or(0));
    }
    match objects.max(count) {
        0 => bytes.len().div_ceil(PDF_BYTES_PER_PAGE).max(1),
        pages => pages,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0]);
        bytes
    }

    #[test]
    fn image_sizes_are_read_from_each_format_header() {
        assert_eq!(image_size(&png(640, 480)), Some((640, 480)));
        let mut gif = b"GIF89a".to_vec();
        gif.extend([0x20, 0x03, 0x58, 0x02]); // 800 × 600
        assert_eq!(image_size(&gif), Some((800, 600)));
        // JPEG: SOI, an APP0 segment to skip, then SOF0 with height 300 and width 400.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0xaa, 0xbb];
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90, 0x03]);
        assert_eq!(image_size(&jpeg), Some((400, 300)));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        webp.extend([0xff, 0x03, 0x00, 0xff, 0x02, 0x00]); // 1024 × 768, minus one
        assert_eq!(image_size(&webp), Some((1024, 768)));
        assert_eq!(image_size(b"not an image"), None);
        assert_eq!(image_size(&[0xff, 0xd8, 0xff]), None, "a cut JPEG");
    }

    #[test]
    fn image_tokens_follow_the_area_and_stop_at_full_size() {
        assert_eq!(image_tokens(200, 200), 54); // 40,000 / 750
        assert_eq!(image_tokens(1000, 1000), 1_334);
        assert_eq!(image_tokens(8000, 8000), MAX_IMAGE_TOKENS, "scaled down");
        assert_eq!(image_tokens(1, 1), 1);
        assert_eq!(image_tokens(0, 0), 1);
    }

    #[test]
    fn pdf_pages_count_page_objects_not_the_page_tree() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
                    2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n\
                    3 0 obj << /Type /Page >> endobj 4 0 obj << /Type/Page >> endobj\n\
                    5 0 obj <</Type /Page/Parent 2 0 R>> endobj";
        assert_eq!(pdf_pages(pdf), 3);
        // Page objects compressed away: the page tree's count still says.
        assert_eq!(pdf_pages(b"%PDF-1.7 << /Type /Pages /Count 12 >>"), 12);
        // Nothing readable: by size.
        assert_eq!(pdf_pages(&vec![b'x'; 120_000]), 3);
    }

    #[test]
    fn a_large_image_is_sized_from_its_head_and_a_late_jpeg_header_is_still_found() {
        let mut large = png(1000, 1000);
        large.resize(3 * 1024 * 1024, 0);
        let part = Part::image("image/png", &large).expect("a valid part");
        assert_eq!(part_tokens(&part), 1_334);
        // A JPEG whose frame header sits behind 70 KB of metadata (two APP segments).
        let mut jpeg = vec![0xff, 0xd8];
        for _ in 0..2 {
            jpeg.extend([0xff, 0xe1, 0x88, 0xb8]); // 35,000 bytes with the length
            jpeg.resize(jpeg.len() + 35_000 - 2, 0);
        }
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90, 0x03]);
        let part = Part::image("image/jpeg", &jpeg).expect("a valid part");
        assert_eq!(part_tokens(&part), 160); // 400 × 300 / 750
    }

    #[test]
    fn a_text_document_counts_its_bytes_without_decoding_them() {
        for len in [0, 1, 2, 3, 4, 1_001] {
            let part = Part::document("text/plain", &vec![b'a'; len]).expect("a valid part");
            let Part::Document {
                source: Source::Data(data),
                ..
            } = &part
            else {
                panic!("an inline document")
            };
            assert_eq!(decoded_len(data), len);
        }
    }

    #[test]
    fn a_page_count_anyone_can_write_does_not_overflow_the_estimate() {
        let pdf = format!("%PDF-1.7 << /Type /Pages /Count {} >>", usize::MAX);
        assert_eq!(pdf_pages(pdf.as_bytes()), usize::MAX);
        let part = Part::pdf(pdf.as_bytes());
        assert_eq!(part_tokens(&part), MAX_PDF_PAGES * PDF_PAGE_TOKENS);
    }

    #[test]
    fn parts_brute_cannot_see_count_as_full_size() {
        assert_eq!(
            part_tokens(&Part::image_url("https://example.com/a.png")),
            MAX_IMAGE_TOKENS
        );
        assert_eq!(
            part_tokens(&Part::document_url("https://example.com/a.pdf")),
            PDF_PAGE_TOKENS
        );
        let unreadable = Part::image("image/png", b"not really a png").expect("a valid part");
        assert_eq!(part_tokens(&unreadable), MAX_IMAGE_TOKENS);
        let small = Part::image("image/png", &png(100, 75)).expect("a valid part");
        assert_eq!(part_tokens(&small), 10);
    }
}
