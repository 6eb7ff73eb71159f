//! Reads IDX, MNIST's format for arrays of bytes: a big-endian header (two zero bytes, the
//! element type, the number of dimensions, each dimension as a `u32`), then the values.

use crate::{Error, Result};

/// IDX's code for unsigned bytes, the only element type read here.
const UBYTE: u8 = 0x08;

/// The dimensions and values of an unsigned-byte IDX array named `name` (for errors).
pub(super) fn parse<'a>(name: &str, bytes: &'a [u8]) -> Result<(Vec<usize>, &'a [u8])> {
    let bad = |what: String| Error::InvalidArgument(format!("IDX data {name}: {what}"));
    let &[0, 0, kind, ndim, ref rest @ ..] = bytes else {
        return Err(bad("no IDX header".into()));
    };
    if kind != UBYTE {
        return Err(bad(format!(
            "element type {kind:#04x}, expected {UBYTE:#04x} (unsigned byte)"
        )));
    }
    let ndim = usize::from(ndim);
    if rest.len() < 4 * ndim {
        return Err(bad("header cut short".into()));
    }
    let (header, values) = rest.split_at(4 * ndim);
    let dims: Vec<usize> = header
        .chunks_exact(4)
        .map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize)
        .collect();
    let count: usize = dims.iter().product();
    if values.len() != count {
        return Err(bad(format!(
            "{} values for dimensions {dims:?}, expected {count}",
            values.len()
        )));
    }
    Ok((dims, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_header_and_refuses_a_short_or_foreign_array() {
        let ok = [0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6];
        let (dims, values) = parse("ok", &ok).unwrap();
        assert_eq!((dims, values), (vec![2, 3], &[1u8, 2, 3, 4, 5, 6][..]));
        let short = parse("short", &ok[..17]).unwrap_err().to_string();
        assert_eq!(
            short,
            "IDX data short: 5 values for dimensions [2, 3], expected 6"
        );
        let floats = parse("f", &[0, 0, 0x0d, 1, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(
            floats.to_string(),
            "IDX data f: element type 0x0d, expected 0x08 (unsigned byte)"
        );
        assert!(parse("empty", &[]).is_err());
        assert!(parse("cut", &[0, 0, 8, 2, 0, 0]).is_err());
    }
}
