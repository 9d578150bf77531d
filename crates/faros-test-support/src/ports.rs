//! Ports for servers a test must name before they start (a chart's values, a fixed `--hub-port`).
//! Everything that can listen on `127.0.0.1:0` and report its address should do that instead.

/// A port on 127.0.0.1 that was free a moment ago (the OS picked it; another process may still
/// take it before the caller binds).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
