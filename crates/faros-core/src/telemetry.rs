//! Shared command-line pieces every faros binary uses: log format/level flags and tracing setup.

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// `--log-format` and `--log-level`, also as `FAROS_LOG_FORMAT` / `FAROS_LOG_LEVEL`.
#[derive(Args, Clone, Debug)]
pub struct LogArgs {
    /// Log format.
    #[arg(long, env = "FAROS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Log filter in tracing's EnvFilter syntax (e.g. `info,faros_embedded_kcp=debug`).
    #[arg(
        long,
        env = "FAROS_LOG_LEVEL",
        default_value = "info,kube=warn,hyper=warn,rustls=error",
        global = true
    )]
    pub log_level: String,
}

/// Errors setting up tracing.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid --log-level {filter:?}: {reason}")]
    Filter { filter: String, reason: String },
}

impl LogArgs {
    /// Installs the global tracing subscriber. Call once, first thing in `main`.
    pub fn init(&self) -> Result<(), TelemetryError> {
        let filter = EnvFilter::try_new(&self.log_level).map_err(|e| TelemetryError::Filter {
            filter: self.log_level.clone(),
            reason: e.to_string(),
        })?;
        // Colours only for a person at a terminal: a log file or a collector would get escape codes.
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr);
        // A second init (tests) keeps the first subscriber; that is fine.
        let _ = match self.log_format {
            LogFormat::Json => builder.json().flatten_event(true).try_init(),
            LogFormat::Text => builder.compact().try_init(),
        };
        Ok(())
    }
}

/// Installs aws-lc-rs as the process-wide rustls crypto provider (kube, hyper-rustls and
/// tokio-rustls all need one; with several compiled in, rustls cannot pick by itself).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM (what Kubernetes sends a pod): the one shutdown trigger every
/// faros binary uses.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutting down");
}
