//! Test harness: a real embedded kcp on 127.0.0.1:0 with real kube clients.
pub use faros_embedded_kcp::testing::TempServer as Kcp;
