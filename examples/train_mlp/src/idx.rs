//! The IDX file format of MNIST (LeCun, Cortes and Burges): a typed n-dimensional array.
//!
//! Layout, all integers big-endian:
//!
//! 1. magic: two zero bytes, a data-type code (`0x08` = unsigned byte, the only type MNIST
//!    uses and the only one read here) and the number of dimensions `d`;
//! 2. `d` sizes, one `u32` each;
//! 3. the elements, in row-major order, `Π sizes` of them.
//!
//! Files may be gzip-compressed (`train-images-idx3-ubyte.gz` as distributed): [`read_file`]
//! decompresses when the content starts with the gzip magic bytes.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

/// The data-type code of unsigned bytes.
const UBYTE: u8 = 0x08;

/// The first two bytes of every gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An IDX array of unsigned bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdxArray {
    /// Sizes of the dimensions, outermost first.
    pub(crate) dims: Vec<usize>,
    /// The elements in row-major order; `dims.iter().product()` of them.
    pub(crate) data: Vec<u8>,
}

/// Why an IDX file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IdxError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not valid gzip: {source}", path.display())]
    Gzip {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not an IDX file: {source}", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
}

/// What is wrong with the bytes of an IDX file.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FormatError {
    #[error("file is {len} bytes long, shorter than the 4-byte magic number")]
    NoMagic { len: usize },
    #[error(
        "bad magic number {found:#010x}: an IDX file starts with 0x0000 then a type code and a \
         dimension count (0x00000803 for MNIST images, 0x00000801 for labels)"
    )]
    BadMagic { found: u32 },
    #[error("element type code {code:#04x} is not supported (only 0x08, unsigned bytes)")]
    UnsupportedType { code: u8 },
    #[error("truncated header: {dims} dimension sizes need {needed} bytes, the file has {len}")]
    TruncatedHeader {
        dims: usize,
        needed: usize,
        len: usize,
    },
    #[error("truncated data: dimensions {dims:?} need {expected} bytes of data, found {found}")]
    TruncatedData {
        dims: Vec<usize>,
        expected: usize,
        found: usize,
    },
    #[error("{extra} unexpected bytes after the {expected} bytes of data of dimensions {dims:?}")]
    TrailingBytes {
        dims: Vec<usize>,
        expected: usize,
        extra: usize,
    },
    #[error("dimensions {dims:?} overflow the address space")]
    TooLarge { dims: Vec<usize> },
}

/// Parses an uncompressed IDX file of unsigned bytes.
///
/// # Errors
///
/// [`FormatError`] for a wrong magic number, an unsupported element type, or a header or data
/// section shorter (or longer) than the sizes say.
pub(crate) fn parse(bytes: &[u8]) -> Result<IdxArray, FormatError> {
    let Some((magic, rest)) = bytes.split_first_chunk::<4>() else {
        return Err(FormatError::NoMagic { len: bytes.len() });
    };
    if magic[..2] != [0, 0] {
        return Err(FormatError::BadMagic {
            found: u32::from_be_bytes(*magic),
        });
    }
    if magic[2] != UBYTE {
        return Err(FormatError::UnsupportedType { code: magic[2] });
    }
    let ndim = usize::from(magic[3]);
    let header = 4 * ndim;
    if rest.len() < header {
        return Err(FormatError::TruncatedHeader {
            dims: ndim,
            needed: 4 + header,
            len: bytes.len(),
        });
    }
    let (sizes, data) = rest.split_at(header);
    let dims: Vec<usize> = sizes
        .chunks_exact(4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
        .collect();
    let Some(expected) = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
        return Err(FormatError::TooLarge { dims });
    };
    if data.len() < expected {
        return Err(FormatError::TruncatedData {
            dims,
            expected,
            found: data.len(),
        });
    }
    if data.len() > expected {
        return Err(FormatError::TrailingBytes {
            dims,
            expected,
            extra: data.len() - expected,
        });
    }
    Ok(IdxArray {
        dims,
        data: data.to_vec(),
    })
}

/// Reads and parses the IDX file at `path`, decompressing it first if it is gzip.
///
/// # Errors
///
/// [`IdxError`]: the file cannot be read, is broken gzip, or is not a valid IDX file.
pub(crate) fn read_file(path: &Path) -> Result<IdxArray, IdxError> {
    let raw = fs::read(path).map_err(|source| IdxError::Io {
        path: path.to_owned(),
        source,
    })?;
    let bytes = if raw.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .map_err(|source| IdxError::Gzip {
                path: path.to_owned(),
                source,
            })?;
        out
    } else {
        raw
    };
    parse(&bytes).map_err(|source| IdxError::Format {
        path: path.to_owned(),
        source,
    })
}

/// Encodes `data` with sizes `dims` as an IDX file of unsigned bytes (for tests).
#[cfg(test)]
pub(crate) fn encode(dims: &[usize], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, UBYTE, dims.len() as u8];
    for &d in dims {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    #[test]
    fn parses_images_and_labels() {
        let images = encode(
            &[2, 2, 3],
            &[0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255],
        );
        // The header is exactly MNIST's: magic 0x00000803, then big-endian sizes.
        assert_eq!(&images[..8], &[0, 0, 8, 3, 0, 0, 0, 2]);
        let parsed = parse(&images).unwrap();
        assert_eq!(parsed.dims, [2, 2, 3]);
        assert_eq!(parsed.data[6..], [250, 251, 252, 253, 254, 255]);

        let labels = parse(&encode(&[3], &[7, 0, 9])).unwrap();
        assert_eq!((labels.dims, labels.data), (vec![3], vec![7, 0, 9]));
    }

    #[test]
    fn sizes_are_big_endian() {
        let mut bytes = vec![0, 0, 8, 1, 0, 0, 1, 2]; // one dimension of 0x0102 = 258
        bytes.extend(std::iter::repeat_n(1u8, 258));
        assert_eq!(parse(&bytes).unwrap().dims, [258]);
    }

    #[test]
    fn rejects_a_bad_magic_number() {
        // A PNG signature, say.
        let err = parse(&[0x89, b'P', b'N', b'G', 0, 0, 0, 0]).unwrap_err();
        assert_eq!(err, FormatError::BadMagic { found: 0x8950_4e47 });
        assert!(
            err.to_string().contains("bad magic number 0x89504e47"),
            "{err}"
        );
        assert_eq!(parse(&[0, 0]).unwrap_err(), FormatError::NoMagic { len: 2 });
    }

    #[test]
    fn rejects_element_types_other_than_bytes() {
        let mut float_file = encode(&[1], &[0, 0, 0, 0]);
        float_file[2] = 0x0d; // float
        assert_eq!(
            parse(&float_file).unwrap_err(),
            FormatError::UnsupportedType { code: 0x0d }
        );
    }

    #[test]
    fn rejects_truncated_files() {
        let full = encode(&[4, 2, 2], &[9; 16]);
        let err = parse(&full[..full.len() - 3]).unwrap_err();
        assert_eq!(
            err,
            FormatError::TruncatedData {
                dims: vec![4, 2, 2],
                expected: 16,
                found: 13
            }
        );
        assert!(err.to_string().starts_with("truncated data"), "{err}");
        // Cut inside the sizes.
        let err = parse(&full[..9]).unwrap_err();
        assert_eq!(
            err,
            FormatError::TruncatedHeader {
                dims: 3,
                needed: 16,
                len: 9
            }
        );
    }

    #[test]
    fn rejects_trailing_bytes_and_overflowing_sizes() {
        let mut long = encode(&[2], &[1, 2]);
        long.push(3);
        assert!(matches!(
            parse(&long).unwrap_err(),
            FormatError::TrailingBytes { extra: 1, .. }
        ));
        let huge = [
            0, 0, 8, 4, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255,
        ];
        assert!(matches!(
            parse(&huge).unwrap_err(),
            FormatError::TooLarge { .. }
        ));
    }

    #[test]
    fn reads_plain_and_gzip_files() {
        let dir = std::env::temp_dir().join(format!("train_mlp_idx_{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let bytes = encode(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let plain = dir.join("a-idx2-ubyte");
        fs::write(&plain, &bytes).unwrap();
        let gz = dir.join("a-idx2-ubyte.gz");
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&bytes).unwrap();
        fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(read_file(&plain).unwrap(), read_file(&gz).unwrap());
        assert_eq!(read_file(&gz).unwrap().data, [1, 2, 3, 4, 5, 6]);

        // Broken gzip and a missing file name the path.
        fs::write(&gz, [0x1f, 0x8b, 8, 0, 1, 2]).unwrap();
        let err = read_file(&gz).unwrap_err();
        assert!(matches!(err, IdxError::Gzip { .. }), "{err}");
        assert!(err.to_string().contains("a-idx2-ubyte.gz"), "{err}");
        let err = read_file(&dir.join("missing")).unwrap_err();
        assert!(matches!(err, IdxError::Io { .. }), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
