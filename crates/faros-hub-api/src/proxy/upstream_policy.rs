//! Which addresses provider URLs may lead the hub to, IO-free.
//!
//! A CatalogEntry's `ui.url` and `backend.url` are written by the provider, not the admin, and the
//! hub connects to them with its own network position: without a rule the proxies and the health
//! probe are a relay into loopback services, the cloud metadata endpoint (`169.254.169.254`) or the
//! hub itself. The rule is checked twice: at registration on the URL's host (a refused entry is not
//! Ready and says why), and at connect time on every address its name resolves to, so a DNS answer
//! that changes after registration (rebinding) is refused too.
//!
//! Always refused: loopback, link-local, unspecified, multicast and broadcast addresses, the cloud
//! metadata endpoints outside link-local (Alibaba's `100.100.100.200`, AWS's IPv6 `fd00:ec2::254`,
//! the IETF protocol range `192.0.0.0/24` with Oracle's `192.0.0.192`), the deprecated site-local
//! `fec0::/10`, and the hub's own host names. An IPv6 address that carries an IPv4 address
//! (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
//! `2002::/16`, Teredo `2001::/32`) is judged as that IPv4 address: a translator or relay on the
//! path delivers it there. Optionally refused (`deny_private`): private, unique-local and shared
//! (CGNAT) ranges — off by default, because in a cluster providers are Services on private
//! addresses. The admin's allow-list (`allow`) overrides both, e.g. `127.0.0.0/8` for `faros dev`,
//! whose providers listen on loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The rule, built from the hub's flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpstreamPolicy {
    /// Ranges admitted whatever else says.
    pub allow: Vec<IpNet>,
    /// Also refuse private, unique-local and shared address space.
    pub deny_private: bool,
    /// The hub's own host names (its public URL's host), lower-case.
    pub hub_hosts: Vec<String>,
}

/// Why an address or host is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "{addr}{} is {kind} address; the hub does not connect provider URLs there unless --allow-upstream lists it",
        carrying(.carried)
    )]
    Address {
        addr: IpAddr,
        /// The IPv4 address `addr` carries, which was judged instead.
        carried: Option<IpAddr>,
        kind: &'static str,
    },
    #[error("{host:?} is the hub itself")]
    Hub { host: String },
    #[error(
        "{host:?} names this machine (loopback); the hub does not connect provider URLs there unless --allow-upstream lists it"
    )]
    LocalName { host: String },
}

impl UpstreamPolicy {
    /// A policy that admits everything (the kcp pass-through, OIDC discovery: not provider URLs).
    pub fn unrestricted() -> Self {
        Self {
            allow: vec![
                IpNet::V4(ipnet::Ipv4Net::default()),
                IpNet::V6(ipnet::Ipv6Net::default()),
            ],
            deny_private: false,
            hub_hosts: Vec::new(),
        }
    }

    /// The loopback ranges, for an allow-list of providers on this machine (`faros dev`, tests).
    pub fn loopback() -> Vec<IpNet> {
        vec![
            IpNet::V4(ipnet::Ipv4Net::new_assert(std::net::Ipv4Addr::LOCALHOST, 8)),
            IpNet::V6(ipnet::Ipv6Net::new_assert(std::net::Ipv6Addr::LOCALHOST, 128)),
        ]
    }

    /// Checks one resolved address.
    pub fn check_addr(&self, addr: IpAddr) -> Result<(), Refused> {
        let judged = canonical(addr);
        if self.allow.iter().any(|net| net.contains(&judged)) {
            return Ok(());
        }
        let refused = |kind| Refused::Address {
            addr,
            carried: (judged != addr).then_some(judged),
            kind,
        };
        match classify(judged) {
            Some(Class::Always(kind)) => Err(refused(kind)),
            Some(Class::Private(kind)) if self.deny_private => Err(refused(kind)),
            _ => Ok(()),
        }
    }

    /// Checks the host a client is about to connect to when it is an address literal, which
    /// clients connect to without asking their resolver ([`super::resolver`] checks names).
    pub fn check_literal(&self, host: &str) -> Result<(), Refused> {
        match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(addr) => self.check_addr(addr),
            Err(_) => Ok(()),
        }
    }

    /// Checks a URL's host as written: an address literal, or a name that is the hub's or this
    /// machine's. Other names are checked when they resolve.
    pub fn check_host(&self, host: &str) -> Result<(), Refused> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(addr) = bare.parse::<IpAddr>() {
            return self.check_addr(addr);
        }
        let name = bare.trim_end_matches('.').to_ascii_lowercase();
        if self.hub_hosts.contains(&name) {
            return Err(Refused::Hub { host: name });
        }
        // RFC 6761: `localhost` and everything under it is loopback whatever DNS says.
        if (name == "localhost" || name.ends_with(".localhost"))
            && self.check_addr(IpAddr::from([127, 0, 0, 1])).is_err()
        {
            return Err(Refused::LocalName { host: name });
        }
        Ok(())
    }
}

/// ` (carrying <IPv4>)` for an address judged as the IPv4 address inside it.
fn carrying(carried: &Option<IpAddr>) -> String {
    carried.map(|c| format!(" (carrying {c})")).unwrap_or_default()
}

enum Class {
    /// Never a provider's place unless allow-listed.
    Always(&'static str),
    /// Refused only with `deny_private`.
    Private(&'static str),
}

/// An IPv6 address that carries an IPv4 address is that IPv4 address (see the module docs);
/// everything else is itself.
fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => embedded_ipv4(v6).map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

/// The IPv4 address inside `v6`, for the forms a network delivers to that IPv4 address.
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // IPv4-mapped, ::ffff:a.b.c.d.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(low(hi, lo)),
        // IPv4-compatible, ::a.b.c.d (RFC 4291, deprecated); `::` and `::1` are IPv6's own.
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) != (0, 0) && (hi, lo) != (0, 1) => Some(low(hi, lo)),
        // NAT64 well-known prefix, 64:ff9b::a.b.c.d (RFC 6052).
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        // 6to4, 2002:aabb:ccdd::/48 (RFC 3056).
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        // Teredo, 2001:0::/32: the client's address, inverted, in the last 32 bits (RFC 4380).
        [0x2001, 0, .., hi, lo] => Some(low(!hi, !lo)),
        _ => None,
    }
}

fn classify(addr: IpAddr) -> Option<Class> {
    match addr {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some(Class::Always("a loopback"))
            } else if v4.is_link_local() {
                Some(Class::Always("a link-local (cloud metadata)"))
            } else if o == [100, 100, 100, 200] {
                Some(Class::Always("a cloud metadata (Alibaba)"))
            } else if o[..3] == [192, 0, 0] {
                Some(Class::Always("an IETF protocol (cloud metadata at 192.0.0.192)"))
            } else if v4.is_unspecified() || o[0] == 0 {
                Some(Class::Always("an unspecified"))
            } else if v4.is_multicast() || v4.is_broadcast() {
                Some(Class::Always("a multicast or broadcast"))
            } else if v4.is_private() {
                Some(Class::Private("a private"))
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some(Class::Private("a shared (CGNAT)"))
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                Some(Class::Always("a loopback"))
            } else if v6.is_unicast_link_local() {
                Some(Class::Always("a link-local"))
            } else if v6.is_unspecified() {
                Some(Class::Always("an unspecified"))
            } else if v6.is_multicast() {
                Some(Class::Always("a multicast"))
            } else if v6 == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
                Some(Class::Always("a cloud metadata (AWS)"))
            } else if v6.segments()[0] & 0xffc0 == 0xfec0 {
                Some(Class::Always("a site-local"))
            } else if v6.is_unique_local() {
                Some(Class::Private("a unique-local"))
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let default = UpstreamPolicy::default();
        let strict = UpstreamPolicy {
            deny_private: true,
            ..Default::default()
        };
        let dev = UpstreamPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
            ..Default::default()
        };
        for (addr, default_ok, strict_ok, dev_ok) in [
            ("127.0.0.1", false, false, true),
            ("127.8.9.10", false, false, true),
            ("::1", false, false, true),
            ("::ffff:127.0.0.1", false, false, true),
            ("169.254.169.254", false, false, false),
            ("::ffff:169.254.169.254", false, false, false),
            ("fe80::1", false, false, false),
            ("0.0.0.0", false, false, false),
            ("0.1.2.3", false, false, false),
            ("::", false, false, false),
            ("224.0.0.1", false, false, false),
            ("255.255.255.255", false, false, false),
            ("ff02::1", false, false, false),
            ("10.96.0.10", true, false, true),
            ("172.16.0.1", true, false, true),
            ("192.168.1.1", true, false, true),
            ("100.64.0.1", true, false, true),
            ("fd00::1", true, false, true),
            // Cloud metadata endpoints outside link-local.
            ("100.100.100.200", false, false, false),
            ("192.0.0.192", false, false, false),
            ("fd00:ec2::254", false, false, false),
            ("100.100.100.201", true, false, true),
            // IPv4 inside IPv6 is judged as the IPv4 address.
            ("::a9fe:a9fe", false, false, false),
            ("::127.0.0.1", false, false, true),
            ("::93.184.216.34", true, true, true),
            ("64:ff9b::a9fe:a9fe", false, false, false),
            ("64:ff9b::7f00:1", false, false, true),
            ("64:ff9b::a00:1", true, false, true),
            ("64:ff9b::5db8:d822", true, true, true),
            ("2002:a9fe:a9fe::1", false, false, false),
            ("2002:7f00:1::1", false, false, true),
            ("2002:5db8:d822::1", true, true, true),
            // Teredo: the client's IPv4 address is stored inverted (169.254.169.254 here).
            ("2001:0:4136:e378:8000:63bf:5601:5601", false, false, false),
            ("fec0::1", false, false, false),
            ("feff::1", false, false, false),
            ("93.184.216.34", true, true, true),
            ("2606:2800:220:1::1", true, true, true),
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(default.check_addr(ip).is_ok(), default_ok, "default {addr}");
            assert_eq!(strict.check_addr(ip).is_ok(), strict_ok, "deny_private {addr}");
            assert_eq!(dev.check_addr(ip).is_ok(), dev_ok, "dev {addr}");
        }
        assert!(
            UpstreamPolicy::unrestricted()
                .check_addr("127.0.0.1".parse().unwrap())
                .is_ok()
        );
        assert!(
            UpstreamPolicy::unrestricted()
                .check_addr("169.254.169.254".parse().unwrap())
                .is_ok()
        );
        // The allow-list can open a single refused address.
        let metadata = UpstreamPolicy {
            allow: vec!["169.254.169.254/32".parse().unwrap()],
            ..Default::default()
        };
        assert!(metadata.check_addr("169.254.169.254".parse().unwrap()).is_ok());
        assert!(metadata.check_addr("169.254.1.1".parse().unwrap()).is_err());
    }

    #[test]
    fn hosts() {
        let policy = UpstreamPolicy {
            hub_hosts: vec!["hub.example.com".into()],
            ..Default::default()
        };
        for (host, ok) in [
            ("quickstart.faros.svc", true),
            ("example.com", true),
            ("127.0.0.1", false),
            ("[::1]", false),
            ("localhost", false),
            ("LOCALHOST.", false),
            ("app.localhost", false),
            ("hub.example.com", false),
            ("Hub.Example.com.", false),
            ("169.254.169.254", false),
        ] {
            assert_eq!(policy.check_host(host).is_ok(), ok, "{host}");
        }
        let dev = UpstreamPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            ..Default::default()
        };
        assert!(dev.check_host("localhost").is_ok());
        assert_eq!(
            UpstreamPolicy::default()
                .check_host("169.254.169.254")
                .unwrap_err()
                .to_string(),
            "169.254.169.254 is a link-local (cloud metadata) address; the hub does not connect provider URLs there unless --allow-upstream lists it"
        );
        assert_eq!(
            UpstreamPolicy::default()
                .check_host("[64:ff9b::a9fe:a9fe]")
                .unwrap_err()
                .to_string(),
            "64:ff9b::a9fe:a9fe (carrying 169.254.169.254) is a link-local (cloud metadata) address; the hub does not connect provider URLs there unless --allow-upstream lists it"
        );
    }
}
