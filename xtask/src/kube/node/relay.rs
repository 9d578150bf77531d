//! The userspace relay behind Service addresses: listening sockets made inside a Pod's network
//! namespace (a thread enters it with `setns`, binds, and leaves the socket there, where it stays),
//! and each accepted connection carried to its backend: a Pod's `127.0.0.1:<port>` dialled from
//! inside that Pod's namespace the same way, or a port on the host's loopback. Nothing here ever
//! dials a ClusterIP or a non-loopback address.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsFd as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::services::Backend;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub(crate) enum RelayError {
    #[error("entering the network namespace {ns}: {source}")]
    Enter { ns: String, source: std::io::Error },
    #[error("{what} {addr} in {ns}: {source}")]
    Socket {
        what: &'static str,
        addr: SocketAddr,
        ns: String,
        source: std::io::Error,
    },
    #[error("a namespace thread ended without an answer")]
    Thread,
}

/// A network namespace: a process's (`/proc/<pid>/ns/net`), or the node's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Netns {
    Host,
    Of(u32),
}

impl Netns {
    fn path(&self) -> Option<PathBuf> {
        match self {
            Netns::Host => None,
            Netns::Of(pid) => Some(PathBuf::from(format!("/proc/{pid}/ns/net"))),
        }
    }

    fn describe(&self) -> String {
        match self {
            Netns::Host => "the host".into(),
            Netns::Of(pid) => format!("/proc/{pid}/ns/net"),
        }
    }

    /// Runs `f` on a fresh thread inside this namespace (the thread ends with it, so no thread of the
    /// node stays in a Pod's namespace); sockets `f` makes stay in the namespace.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
        what: &'static str,
        addr: SocketAddr,
    ) -> Result<T, RelayError> {
        let path = self.path();
        let ns = self.describe();
        let handle = std::thread::spawn(move || -> Result<T, RelayError> {
            if let Some(path) = path {
                let file = std::fs::File::open(&path).map_err(|source| RelayError::Enter {
                    ns: path.display().to_string(),
                    source,
                })?;
                rustix::thread::move_into_link_name_space(
                    file.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .map_err(|e| RelayError::Enter {
                    ns: path.display().to_string(),
                    source: e.into(),
                })?;
            }
            f().map_err(|source| RelayError::Socket { what, addr, ns, source })
        });
        handle.join().map_err(|_| RelayError::Thread)?
    }

    /// A listener on `addr` inside this namespace.
    pub fn listen(&self, addr: SocketAddr) -> Result<tokio::net::TcpListener, RelayError> {
        let std = self.run(
            move || {
                let l = std::net::TcpListener::bind(addr)?;
                l.set_nonblocking(true)?;
                Ok(l)
            },
            "listening on",
            addr,
        )?;
        tokio::net::TcpListener::from_std(std).map_err(|source| RelayError::Socket {
            what: "registering",
            addr,
            ns: self.describe(),
            source,
        })
    }

    /// A connection to `addr` from inside this namespace.
    pub fn connect(&self, addr: SocketAddr) -> Result<tokio::net::TcpStream, RelayError> {
        let std = self.run(
            move || {
                let s = std::net::TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
                s.set_nonblocking(true)?;
                Ok(s)
            },
            "connecting to",
            addr,
        )?;
        tokio::net::TcpStream::from_std(std).map_err(|source| RelayError::Socket {
            what: "registering",
            addr,
            ns: self.describe(),
            source,
        })
    }
}

/// What the relays read at each connection: the backends of every listened address, and the
/// namespace of every running Pod.
#[derive(Default)]
pub(crate) struct Routes {
    pub backends: BTreeMap<SocketAddrV4, Vec<Backend>>,
    pub pods: BTreeMap<String, u32>,
}

pub(crate) type SharedRoutes = Arc<RwLock<Routes>>;

/// Accepts on `listener` until aborted, relaying each connection to a backend of `route` (looked up
/// per connection, so endpoint changes apply at once), round-robin.
pub(crate) async fn serve(listener: tokio::net::TcpListener, route: SocketAddrV4, routes: SharedRoutes) {
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        let routes = routes.clone();
        let next = next.clone();
        tokio::spawn(async move {
            let target = {
                let Ok(r) = routes.read() else { return };
                let Some(backends) = r.backends.get(&route).filter(|b| !b.is_empty()) else {
                    return;
                };
                let backend = backends[next.fetch_add(1, Ordering::Relaxed) % backends.len()].clone();
                match backend {
                    Backend::Host(port) => (Netns::Host, port),
                    Backend::Pod { uid, port } => match r.pods.get(&uid) {
                        Some(pid) => (Netns::Of(*pid), port),
                        None => return,
                    },
                }
            };
            let (ns, port) = target;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let outbound = tokio::task::spawn_blocking(move || ns.connect(addr)).await;
            if let Ok(Ok(mut outbound)) = outbound {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}
