//! Async drivers for segflake's generators on tokio.
