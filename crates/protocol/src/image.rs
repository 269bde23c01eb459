//! An image that goes to the model with a message (an `@shot.png` attachment).
//!
//! The bytes are base64-encoded once, when the image is attached, because that is the form all
//! three wire formats take and a conversation re-sends every earlier message at every call. The
//! encoded text is shared (`Arc`), so cloning a conversation never copies an image, and it never
//! changes, so the bytes of an earlier message stay the same from call to call (the prompt cache
//! keeps serving them).
//!
//! Serialized (journal lines, JSON events), an image is only its description and the SHA-256 of
//! its bytes: the journal stores the bytes once in a file named by that hash and resume reads
//! them back (see `session::journal`). Inline base64 in a journal line would make every listing
//! and every resume parse megabytes per image.

use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The image formats every provider pablo speaks accepts, told apart by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageFormat {
    /// The format the bytes are, by their magic number (never by a file name).
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The short name people read (`PNG`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }

    /// The file extension the journal's copy is stored under.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }

    pub fn from_media_type(media_type: &str) -> Option<Self> {
        [Self::Png, Self::Jpeg, Self::Gif, Self::Webp]
            .into_iter()
            .find(|f| f.media_type() == media_type)
    }
}

/// Largest image attached: 3.75 MiB, whose base64 form is 5 MiB, the most Anthropic takes for
/// one image (OpenAI takes more; the smaller bound holds for every provider).
pub const MAX_IMAGE_BYTES: usize = 3 * 1024 * 1024 + 768 * 1024;

/// The most tokens one image is estimated at. Anthropic documents an image as about
/// width × height / 750 tokens and scales larger images down to about 1.15 megapixels, which is
/// about 1,600 tokens; OpenAI's high-detail images cost 85 tokens plus 170 per 512-pixel tile
/// after scaling to fit 2048 × 2048 with the short side at most 768, which stays below that too.
pub const MAX_IMAGE_TOKENS: u64 = 1_600;
/// The fewest tokens one image is estimated at (OpenAI's base cost of any image).
pub const MIN_IMAGE_TOKENS: u64 = 85;

/// An image of a message: what it is, and its bytes as base64.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// SHA-256 of the bytes, lowercase hex: the name of the journal's copy.
    pub sha256: String,
    /// The size of the image file.
    pub bytes: usize,
    /// Pixels, when the header says (0 when it could not be read).
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    /// The bytes, base64 (standard alphabet, padded). Empty when a resumed session could not
    /// find its stored copy; never serialized.
    #[serde(skip)]
    pub base64: Arc<str>,
}

impl std::fmt::Debug for Image {
    // The base64 text would bury everything else in a debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("media_type", &self.media_type)
            .field("sha256", &self.sha256)
            .field("bytes", &self.bytes)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("loaded", &!self.base64.is_empty())
            .finish()
    }
}

impl Image {
    /// The image `bytes` are, or `None` when they are not PNG, JPEG, GIF or WebP with a header
    /// that gives the image's size (a PNG's IHDR): magic bytes alone are a file that only
    /// claims to be an image, and a provider refuses it.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let format = ImageFormat::sniff(bytes)?;
        let size = imagesize::blob_size(bytes).ok()?;
        let width = u32::try_from(size.width).unwrap_or(u32::MAX);
        let height = u32::try_from(size.height).unwrap_or(u32::MAX);
        if width == 0 || height == 0 {
            return None;
        }
        Some(Self {
            media_type: format.media_type().to_string(),
            sha256: hex::encode(Sha256::digest(bytes)),
            bytes: bytes.len(),
            width,
            height,
            base64: base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into(),
        })
    }

    pub fn format(&self) -> Option<ImageFormat> {
        ImageFormat::from_media_type(&self.media_type)
    }

    /// The image's bytes again (from the base64), for storing them.
    pub fn decode(&self) -> Option<Vec<u8>> {
        base64::engine::general_purpose::STANDARD
            .decode(self.base64.as_bytes())
            .ok()
    }

    /// Whether the bytes are here (a resumed session whose stored copy is gone has none).
    pub fn is_loaded(&self) -> bool {
        !self.base64.is_empty()
    }

    /// Fills the bytes from a stored copy, if it is the image this one describes.
    pub fn load(&mut self, bytes: &[u8]) -> bool {
        if hex::encode(Sha256::digest(bytes)) != self.sha256 {
            return false;
        }
        self.base64 = base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into();
        true
    }

    /// `data:image/png;base64,…`, as the OpenAI APIs take an inline image.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.base64)
    }

    /// The tokens the image is estimated to cost: width × height / 750, between
    /// [`MIN_IMAGE_TOKENS`] and [`MAX_IMAGE_TOKENS`]; the maximum when the size is unknown.
    pub fn estimated_tokens(&self) -> u64 {
        if self.width == 0 || self.height == 0 {
            return MAX_IMAGE_TOKENS;
        }
        (u64::from(self.width) * u64::from(self.height))
            .div_ceil(750)
            .clamp(MIN_IMAGE_TOKENS, MAX_IMAGE_TOKENS)
    }

    /// `PNG 800×600, 12.3 KB`: what a person is shown instead of the bytes.
    pub fn summary(&self) -> String {
        let kind = self.format().map_or(self.media_type.as_str(), |f| f.name());
        let size = human_bytes(self.bytes);
        if self.width > 0 && self.height > 0 {
            format!("{kind} {}×{}, {size}", self.width, self.height)
        } else {
            format!("{kind}, {size}")
        }
    }
}

/// An image the person attached with `@path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAttachment {
    pub path: String,
    #[serde(flatten)]
    pub image: Image,
}

/// `812 B`, `12.3 KB`, `4.1 MB` (powers of 1024, as `ls -h`).
pub fn human_bytes(n: usize) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if f < KB {
        format!("{n} B")
    } else if f < KB * KB {
        format!("{:.1} KB", f / KB)
    } else {
        format!("{:.1} MB", f / (KB * KB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG (the smallest complete one).
    pub const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn formats_are_told_apart_by_their_first_bytes_not_their_names() {
        assert_eq!(ImageFormat::sniff(PNG_1X1), Some(ImageFormat::Png));
        assert_eq!(
            ImageFormat::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::sniff(b"GIF89a...."), Some(ImageFormat::Gif));
        assert_eq!(
            ImageFormat::sniff(b"RIFF\x10\0\0\0WEBPVP8 "),
            Some(ImageFormat::Webp)
        );
        assert_eq!(ImageFormat::sniff(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(ImageFormat::sniff(b"not an image at all"), None);
        assert_eq!(ImageFormat::sniff(b""), None);
    }

    #[test]
    fn an_image_knows_its_size_hash_and_base64() {
        let i = Image::from_bytes(PNG_1X1).unwrap();
        assert_eq!(i.media_type, "image/png");
        assert_eq!((i.width, i.height), (1, 1));
        assert_eq!(i.bytes, PNG_1X1.len());
        assert_eq!(i.decode().unwrap(), PNG_1X1);
        assert!(
            i.data_url()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        assert_eq!(i.summary(), "PNG 1×1, 67 B");
    }

    #[test]
    fn the_token_estimate_is_bounded_both_ways() {
        let mut i = Image::from_bytes(PNG_1X1).unwrap();
        assert_eq!(i.estimated_tokens(), MIN_IMAGE_TOKENS);
        (i.width, i.height) = (1000, 750);
        assert_eq!(i.estimated_tokens(), 1000);
        (i.width, i.height) = (8000, 8000);
        assert_eq!(i.estimated_tokens(), MAX_IMAGE_TOKENS);
        (i.width, i.height) = (0, 0);
        assert_eq!(i.estimated_tokens(), MAX_IMAGE_TOKENS);
    }

    #[test]
    fn serialized_an_image_is_its_description_and_loading_checks_the_hash() {
        let i = Image::from_bytes(PNG_1X1).unwrap();
        let json = serde_json::to_string(&i).unwrap();
        assert!(!json.contains("iVBOR"), "no bytes in {json}");
        let mut back: Image = serde_json::from_str(&json).unwrap();
        assert!(!back.is_loaded());
        assert!(!back.load(b"other bytes"));
        assert!(back.load(PNG_1X1));
        assert_eq!(back, i);
    }
}
