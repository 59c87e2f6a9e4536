//! Standard output of the commands, written through [`print`]: a reader that goes away before
//! the end (`bridle check … | head`, a closed pipe) is not an error. `println!` panics on that
//! (exit 101 with a backtrace); here the rest of the output is dropped quietly and the command
//! ends with its own exit code, as if the reader had read everything. Output that must be read
//! (a new API key) uses [`print_required`], for which a closed pipe is an error.

use anyhow::{Context as _, Result};
use std::fmt::Display;
use std::io::{ErrorKind, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output's reader is gone: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output (and flushes it). A closed pipe ends the output quietly;
/// another write error is an error.
pub fn print(text: impl Display) -> Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    match write(&text) {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other.context("writing to standard output"),
    }
}

/// Writes `text` to standard output (and flushes it); a closed pipe is an error too.
pub fn print_required(text: impl Display) -> std::io::Result<()> {
    write(&text)
}

fn write(text: &dyn Display) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    write!(stdout, "{text}")?;
    stdout.flush()
}
