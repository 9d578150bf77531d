//! A generated file, as codegen writes it and the generators ([`crate::chart_docs`], the types)
//! produce it: a leaf both use, so the generators need not import codegen, which calls them.

use std::path::PathBuf;

/// One file to generate: path relative to the project root, full contents.
#[derive(Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub contents: String,
}
