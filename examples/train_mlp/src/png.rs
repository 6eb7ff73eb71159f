//! A minimal PNG writer for the loss plot: 8-bit RGB, no filtering, one zlib stream through
//! `flate2` (already here for gzipped MNIST files), so that the main job does not build an image
//! library (plotters' `bitmap_encoder` pulls in `image`, with JPEG and more) for one file.

use std::io::{self, Write};

use flate2::write::ZlibEncoder;
use flate2::{Compression, Crc};

/// The eight bytes every PNG file starts with.
pub(crate) const SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Encodes `rgb` (`width * height` pixels, three bytes each, row by row) as a PNG file.
///
/// # Errors
///
/// An [`io::Error`] of kind `InvalidInput` when `rgb` does not hold `width * height` pixels or
/// the image is empty.
pub(crate) fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> io::Result<Vec<u8>> {
    let row = width as usize * 3;
    if width == 0 || height == 0 || rgb.len() != row * height as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} bytes are not a {width}x{height} RGB image", rgb.len()),
        ));
    }
    // Each scanline is preceded by its filter type; 0 is none.
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    for line in rgb.chunks_exact(row) {
        zlib.write_all(&[0])?;
        zlib.write_all(line)?;
    }
    let idat = zlib.finish()?;

    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate compression, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);

    let mut out = Vec::with_capacity(SIGNATURE.len() + idat.len() + 3 * 12 + ihdr.len());
    out.extend_from_slice(SIGNATURE);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    Ok(out)
}

/// Appends one chunk: length, type, data, and the CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let len = u32::try_from(data.len()).expect("a PNG chunk holds under 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    let mut crc = Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::ZlibDecoder;

    use super::*;

    /// The chunks of `png` after the signature, as (type, data, stored CRC).
    fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>, u32)> {
        let mut rest = &png[8..];
        let mut out = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = rest[4..8].try_into().unwrap();
            let data = rest[8..8 + len].to_vec();
            let crc = u32::from_be_bytes(rest[8 + len..12 + len].try_into().unwrap());
            out.push((kind, data, crc));
            rest = &rest[12 + len..];
        }
        out
    }

    #[test]
    fn a_two_by_two_image_round_trips() {
        let rgb = [255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30];
        let png = encode_rgb(2, 2, &rgb).unwrap();
        assert_eq!(&png[..8], SIGNATURE);
        let chunks = chunks(&png);
        let kinds: Vec<&[u8]> = chunks.iter().map(|c| &c.0[..]).collect();
        assert_eq!(kinds, [&b"IHDR"[..], b"IDAT", b"IEND"]);
        assert_eq!(chunks[0].1, [0, 0, 0, 2, 0, 0, 0, 2, 8, 2, 0, 0, 0]);
        // The CRC of an empty IEND chunk is the same in every PNG file.
        assert_eq!(chunks[2].2, 0xAE42_6082);
        let mut raw = Vec::new();
        ZlibDecoder::new(&chunks[1].1[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw, [0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 10, 20, 30]);
    }

    #[test]
    fn every_chunk_crc_covers_type_and_data() {
        let png = encode_rgb(3, 1, &[1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        for (kind, data, stored) in chunks(&png) {
            let mut crc = Crc::new();
            crc.update(&kind);
            crc.update(&data);
            assert_eq!(crc.sum(), stored, "{}", String::from_utf8_lossy(&kind));
        }
    }

    #[test]
    fn a_buffer_of_the_wrong_size_is_an_error() {
        let err = encode_rgb(2, 2, &[0; 11]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), "11 bytes are not a 2x2 RGB image");
        assert!(encode_rgb(0, 0, &[]).is_err());
    }
}
