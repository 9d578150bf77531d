//! `faros-test-support`: the helpers faros' tests share, so each exists once.
//!
//! | module | job |
//! |---|---|
//! | [`eventually`](mod@eventually) | poll a condition that has no watch (HTTP, files, processes) until it holds, with a deadline |
//! | [`kubeconfig`] | kube configs and clients from kubeconfig YAML or files |
//! | [`kubectl`] | `kubectl --kubeconfig <file> <args>` with a manifest on its stdin, and what it printed |
//! | [`users`] | test users with random tokens, and static token files (`token,user,uid[,"groups"]`) |
//! | [`https`] | HTTP clients trusting a test platform's CA |
//! | [`mcp_client`] | an MCP session over streamable HTTP as hosts open one, with its `tools/list_changed` notifications |
//! | [`ports`] | a free TCP port on 127.0.0.1 |
//! | [`child`] | a server as a child process: log file, SIGTERM and exit awaited, killed when dropped |
//! | [`balancer`] | nginx as a round-robin HTTPS load balancer in front of a server's replicas |
//! | [`devproc`] | `faros dev` as a child process: started, waited on until it announces itself, killed |
//! | [`oidc`] | a real OpenID Connect provider (`e2e/oidc`) as a child process, and a headless login through its form |
//! | [`portal_walk`] | the portal browser walk's fixture: the admin-registered providers it visits |
//! | [`tools`] | external tools the tests run (helm, nginx), found once, with how to install them |
//! | [`helm`](mod@helm) | `helm lint`, `helm template` and `helm dependency update` of a chart on disk, with helm's words when it refuses |
//!
//! What it must not do: be a normal dependency of anything (`cargo xtask lint` refuses that: it is
//! for tests only), depend on a workspace crate other than `faros-core` (so every crate's tests may
//! use it, the embedded kcp's included), or sleep as a synchronization: waits end on a condition.
//! Kubernetes objects are waited on with `faros_core::wait::wait_for` (a watch), not here. The
//! in-process platform (`faros::dev::Stack`) is the e2e harness's (`faros-e2e`), which composes
//! the components; this crate knows none of them.

pub mod balancer;
pub mod child;
pub mod devproc;
pub mod eventually;
pub mod helm;
pub mod https;
pub mod kubeconfig;
pub mod kubectl;
pub mod mcp_client;
pub mod oidc;
pub mod portal_walk;
pub mod ports;
pub mod tools;
pub mod users;

pub use eventually::{eventually, eventually_some};
