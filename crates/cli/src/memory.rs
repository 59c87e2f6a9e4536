//! How the long-running commands (`serve`, `mock-llm`) take memory from the system.
//!
//! Transparent huge pages are off for them (Linux): mimalloc asks for huge pages on its arenas,
//! and the first touch of a fresh 2 MiB page zeroes all of it at once — under steady load that
//! stalled the process for ~6 ms every ~150 ms (bench/history-2026-11.md, gateway sessions), the slowest
//! percent of requests. Setting `MIMALLOC_ALLOW_THP` (mimalloc's own option) leaves the choice
//! to mimalloc: `MIMALLOC_ALLOW_THP=1` turns huge pages back on.

/// Turns transparent huge pages off for this process unless `MIMALLOC_ALLOW_THP` is set.
pub fn steady_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none()
        && let Err(error) = rustix::thread::disable_transparent_huge_pages(true)
    {
        tracing::debug!(%error, "cannot turn transparent huge pages off");
    }
}
