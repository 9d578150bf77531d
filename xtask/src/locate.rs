//! Where things are: the workspace root and the tools on PATH. A leaf the subcommands share.

use std::path::{Path, PathBuf};

/// The workspace root: xtask always lives directly below it.
pub fn project_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Whether `tool` is a path to a file or found on PATH.
pub fn which(tool: &str) -> bool {
    if tool.contains('/') {
        return Path::new(tool).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}
