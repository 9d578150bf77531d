//! The scenarios, each `run(&Platform)`: the same code runs in-process (one test file per scenario,
//! each starting its own platform) and against an external platform (`external_faros_dev.rs`, or any
//! test file with `FAROS_E2E_TARGET=external`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

pub mod clients;
pub mod gitops;
pub mod lifecycle;
pub mod mcp;
pub mod membership_index;
pub mod provider_deletion;
pub mod security;
pub mod tenancy;
