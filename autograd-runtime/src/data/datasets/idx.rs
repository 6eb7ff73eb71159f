//! Reads IDX, MNIST's format for arrays of bytes (LeCun, Cortes and Burges). All integers
//! big-endian:
//!
//! 1. magic: two zero bytes, the element type (`0x08` = unsigned byte, the only type MNIST
//!    uses and the only one read here) and the number of dimensions `d`;
//! 2. `d` sizes, one `u32` each;
//! 3. the elements, in row-major order, `Π sizes` of them.
//!
//! A file may be gzip-compressed (`train-images-idx3-ubyte.gz`, as MNIST is distributed):
//! [`read`] decompresses when the content starts with gzip's magic bytes.

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use crate::{Error, Result};

/// IDX's code for unsigned bytes, the only element type read here.
const UBYTE: u8 = 0x08;

/// The first two bytes of every gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The dimensions and values of an unsigned-byte IDX array named `name` (for errors).
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming `name`: a wrong magic number, another element type, or a
/// header or data section shorter or longer than the sizes say.
pub(super) fn parse<'a>(name: &str, bytes: &'a [u8]) -> Result<(Vec<usize>, &'a [u8])> {
    let bad = |what: String| Error::InvalidArgument(format!("{name}: {what}"));
    let Some((&[zero0, zero1, kind, ndim], rest)) = bytes.split_first_chunk::<4>() else {
        return Err(bad(format!(
            "not an IDX file: {} bytes, shorter than the 4-byte magic number",
            bytes.len()
        )));
    };
    if [zero0, zero1] != [0, 0] {
        return Err(bad(format!(
            "not an IDX file: magic number {:#010x}; an IDX file starts with 0x0000, then a \
             type code and a dimension count (0x00000803 for MNIST images, 0x00000801 for labels)",
            u32::from_be_bytes([zero0, zero1, kind, ndim])
        )));
    }
    if kind != UBYTE {
        return Err(bad(format!(
            "IDX element type {kind:#04x} is not supported (only 0x08, unsigned bytes)"
        )));
    }
    let ndim = usize::from(ndim);
    if rest.len() < 4 * ndim {
        return Err(bad(format!(
            "truncated IDX header: {ndim} dimension sizes need {} bytes, the file has {}",
            4 + 4 * ndim,
            bytes.len()
        )));
    }
    let (header, values) = rest.split_at(4 * ndim);
    let dims: Vec<usize> = header
        .chunks_exact(4)
        .map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize)
        .collect();
    let Some(count) = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
        return Err(bad(format!(
            "IDX dimensions {dims:?} overflow the address space"
        )));
    };
    if values.len() < count {
        return Err(bad(format!(
            "truncated IDX data: dimensions {dims:?} need {count} bytes, found {}",
            values.len()
        )));
    }
    if values.len() > count {
        return Err(bad(format!(
            "{} unexpected bytes after the {count} bytes of IDX data of dimensions {dims:?}",
            values.len() - count
        )));
    }
    Ok((dims, values))
}

/// Reads the IDX file at `path` (decompressing it first if it is gzip) and parses it.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the path: the file cannot be read, is broken gzip, or is
/// not an IDX array of unsigned bytes ([`parse`]).
pub(super) fn read(path: &Path) -> Result<(Vec<usize>, Vec<u8>)> {
    let name = path.display().to_string();
    let raw = std::fs::read(path)
        .map_err(|e| Error::InvalidArgument(format!("cannot read {name}: {e}")))?;
    let bytes = if raw.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| Error::InvalidArgument(format!("{name} is not valid gzip: {e}")))?;
        out
    } else {
        raw
    };
    let (dims, values) = parse(&name, &bytes)?;
    Ok((dims, values.to_vec()))
}

/// `values` with sizes `dims` as an IDX file of unsigned bytes (for tests).
#[cfg(test)]
pub(super) fn encode(dims: &[usize], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, UBYTE, u8::try_from(dims.len()).unwrap()];
    for &d in dims {
        out.extend_from_slice(&u32::try_from(d).unwrap().to_be_bytes());
    }
    out.extend_from_slice(values);
    out
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    #[test]
    fn reads_a_header_and_refuses_a_short_long_or_foreign_array() {
        let ok = encode(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        // MNIST's own header layout: magic 0x00000802, then big-endian sizes.
        assert_eq!(&ok[..12], &[0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3]);
        let (dims, values) = parse("ok", &ok).unwrap();
        assert_eq!((dims, values), (vec![2, 3], &[1u8, 2, 3, 4, 5, 6][..]));
        let message = |bytes: &[u8]| parse("f", bytes).unwrap_err().to_string();
        assert_eq!(
            message(&ok[..17]),
            "f: truncated IDX data: dimensions [2, 3] need 6 bytes, found 5"
        );
        assert_eq!(
            message(&[ok.as_slice(), &[7]].concat()),
            "f: 1 unexpected bytes after the 6 bytes of IDX data of dimensions [2, 3]"
        );
        assert_eq!(
            message(&[0, 0, 0x0d, 1, 0, 0, 0, 0]),
            "f: IDX element type 0x0d is not supported (only 0x08, unsigned bytes)"
        );
        assert!(message(&[0x89, b'P', b'N', b'G', 0, 0]).starts_with(
            "f: not an IDX file: magic number 0x89504e47; an IDX file starts with 0x0000"
        ));
        assert_eq!(
            message(&[0, 0]),
            "f: not an IDX file: 2 bytes, shorter than the 4-byte magic number"
        );
        assert_eq!(
            message(&[0, 0, 8, 2, 0, 0]),
            "f: truncated IDX header: 2 dimension sizes need 12 bytes, the file has 6"
        );
        let huge = [[0, 0, 8, 4].as_slice(), &[255; 16]].concat();
        assert!(message(&huge).contains("overflow"));
        // Sizes are big-endian: one dimension of 0x0102 = 258.
        let mut long = vec![0, 0, 8, 1, 0, 0, 1, 2];
        long.extend([1u8; 258]);
        assert_eq!(parse("long", &long).unwrap().0, [258]);
    }

    #[test]
    fn reads_plain_and_gzip_files_and_names_the_path_in_errors() {
        let dir = std::env::temp_dir().join(format!("autograd_idx_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes = encode(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let plain = dir.join("a-idx2-ubyte");
        std::fs::write(&plain, &bytes).unwrap();
        let gz = dir.join("a-idx2-ubyte.gz");
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(&bytes).unwrap();
        std::fs::write(&gz, encoder.finish().unwrap()).unwrap();
        let expected = (vec![2, 3], vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(read(&plain).unwrap(), expected);
        assert_eq!(read(&gz).unwrap(), expected);

        std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 1, 2]).unwrap();
        let err = read(&gz).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{} is not valid gzip", gz.display())),
            "{err}"
        );
        std::fs::write(&plain, &bytes[..15]).unwrap();
        let err = read(&plain).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: truncated IDX data: dimensions [2, 3] need 6 bytes, found 3",
                plain.display()
            )
        );
        let missing = dir.join("missing");
        let err = read(&missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("cannot read {}: ", missing.display())),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
