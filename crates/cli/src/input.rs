//! [`read_reply`]: reads a reply from a file or standard input with bounded memory — at most
//! `limit + 1` bytes are kept; a larger input is reported by size, never loaded.

use anyhow::{Context as _, Result, bail};
use std::io::{IsTerminal, Read};
use std::path::Path;

/// A reply as read.
#[derive(Debug)]
pub enum Reply {
    /// The bytes (at most the limit).
    Bytes(Vec<u8>),
    /// Larger than the limit: its size in bytes.
    TooLarge(u64),
}

/// Reads `source` (`None` or `-` for standard input), keeping at most `limit` bytes.
pub fn read_reply(source: Option<&Path>, limit: usize) -> Result<Reply> {
    match source {
        None => read_stdin(limit),
        Some(path) if path == Path::new("-") => read_stdin(limit),
        Some(path) => {
            let meta = std::fs::metadata(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if meta.is_dir() {
                bail!("{} is a directory, not a reply file", path.display());
            }
            if meta.is_file() && meta.len() > limit as u64 {
                return Ok(Reply::TooLarge(meta.len()));
            }
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            read_limited(file, limit, &path.display().to_string())
        }
    }
}

fn read_stdin(limit: usize) -> Result<Reply> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!(
            "bridle: reading the reply from the terminal; end it with Ctrl-D (or pass a FILE)"
        );
    }
    read_limited(stdin.lock(), limit, "standard input")
}

fn read_limited(reader: impl Read, limit: usize, name: &str) -> Result<Reply> {
    let mut buffer = Vec::new();
    let mut reader = reader;
    let mut head = (&mut reader).take(limit as u64 + 1);
    head.read_to_end(&mut buffer)
        .with_context(|| format!("cannot read {name}"))?;
    if buffer.len() > limit {
        // Count the rest without keeping it.
        let rest = std::io::copy(&mut reader, &mut std::io::sink())
            .with_context(|| format!("cannot read {name}"))?;
        return Ok(Reply::TooLarge(buffer.len() as u64 + rest));
    }
    Ok(Reply::Bytes(buffer))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_are_read_whole_and_large_ones_only_counted() {
        let Reply::Bytes(b) = read_limited(&b"hello"[..], 5, "t").unwrap() else {
            panic!()
        };
        assert_eq!(b, b"hello");
        let Reply::TooLarge(n) = read_limited(&[b'x'; 100][..], 10, "t").unwrap() else {
            panic!()
        };
        assert_eq!(n, 100);
    }
}
