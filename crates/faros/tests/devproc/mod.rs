//! `faros dev` for this crate's black-box tests: the shared launcher
//! (`faros_test_support::devproc`) with the binary cargo built for these tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

pub use faros_test_support::devproc::{DevProcess, Launch};

/// `faros dev` with state in `state_dir`, every port picked by the OS.
pub fn launch(state_dir: &Path) -> Launch {
    Launch::new(env!("CARGO_BIN_EXE_faros"), state_dir)
}

/// Starts `faros dev` with `extra` flags and waits until it has announced itself (for tests
/// without an async runtime).
pub fn start(state_dir: &Path, extra: &[&str]) -> DevProcess {
    launch(state_dir).args(extra).start_blocking().unwrap()
}
