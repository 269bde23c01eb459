//! The rules `web.fetch` applies before any byte leaves the machine, none of which a setting or an
//! approval can switch off: which URLs may be requested at all, which host names are local and
//! refused without a lookup, which addresses are not public, and which redirects are followed.
//!
//! They live apart from the tool so that they can be tested exhaustively as pure functions: the
//! address classifier is the whole defence against a page (or a prompt) steering pablo at the
//! machine's own services or the cloud metadata endpoint, so every range and every spelling of
//! one is a test here.
//!
//! Host spellings are parsed by the `url` crate, which implements the WHATWG host parser that
//! browsers use: `0x7f.1`, `2130706433`, `0177.0.0.1` and `127.1` all come back as the IPv4
//! address 127.0.0.1, percent-escapes are decoded and names are lowercased, so a check on the
//! parsed host sees the address the connection would really go to.

use std::net::{IpAddr, Ipv4Addr};

use pablo_process::addresses::refused_range;
#[cfg(test)]
use pablo_process::addresses::{refused_v4, refused_v6};

use reqwest::Url;
use serde_json::{Value, json};

use pablo_core::{Coded, ErrorCode};

/// Ports fetched when `PABLO_FETCH_ALLOWED_PORTS` is not set.
pub(crate) const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The environment variable that lists the ports `web.fetch` may connect to (comma-separated).
pub(crate) const PORTS_ENV: &str = "PABLO_FETCH_ALLOWED_PORTS";

/// Why a fetch was refused or failed. Every refusal names what was refused and the rule.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("{url:?} is not a URL web.fetch can request: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("{url} uses the scheme {scheme:?}; only http and https are fetched")]
    Scheme { url: String, scheme: String },
    #[error("{url} carries a user name or password; credentials are never sent in a URL")]
    Userinfo { url: String },
    #[error("{url} uses port {port}; the allowed ports are {allowed} (PABLO_FETCH_ALLOWED_PORTS)")]
    Port {
        url: String,
        port: u16,
        allowed: String,
    },
    #[error("{host} is a local name ({rule}); only public hosts are fetched")]
    LocalName { host: String, rule: &'static str },
    #[error("{host} {via}{addr}, which is {range}; only public addresses are fetched")]
    Address {
        host: String,
        via: &'static str,
        addr: IpAddr,
        range: String,
    },
    #[error("{host} could not be resolved: {message}")]
    Lookup { host: String, message: String },
    #[error(
        "the network-request budget of this session ({limit}, limits.max_network_requests) is used up"
    )]
    Budget { limit: u64 },
    #[error("fetching {url} took longer than the limit of {seconds} s")]
    Timeout { url: String, seconds: u64 },
    #[error("fetching {url} failed: {message}")]
    Http { url: String, message: String },
    #[error("{url} redirected more than {max} times; the last redirect went to {location}")]
    TooManyRedirects {
        url: String,
        max: usize,
        location: String,
    },
    #[error("{from} redirected to {to}, from https to http; such a redirect is never followed")]
    Downgrade { from: String, to: String },
    #[error(
        "{from} redirected to another host: {to}. It was not followed; call fetch_url with that URL \
         if you want it (it is checked and approved on its own)"
    )]
    OtherHost { from: String, to: String },
    #[error("{url} answered with a redirect whose location {location:?} is not a URL")]
    BadRedirect { url: String, location: String },
    #[error(
        "{url} returned {content_type:?}, which is not text; web.fetch returns HTML, JSON, XML and plain text"
    )]
    Unsupported { url: String, content_type: String },
    #[error("fetching {url} was cancelled")]
    Cancelled { url: String },
}

impl Coded for FetchError {
    fn code(&self) -> ErrorCode {
        match self {
            FetchError::InvalidUrl { .. } => ErrorCode::InvalidUrl,
            FetchError::Scheme { .. } => ErrorCode::SchemeRefused,
            FetchError::Userinfo { .. } => ErrorCode::UserinfoRefused,
            FetchError::Port { .. } => ErrorCode::PortRefused,
            FetchError::LocalName { .. } => ErrorCode::HostRefused,
            FetchError::Address { .. } => ErrorCode::AddressRefused,
            FetchError::Lookup { .. } => ErrorCode::DnsFailed,
            FetchError::Budget { .. } => ErrorCode::NetworkBudgetExhausted,
            FetchError::Timeout { .. } => ErrorCode::FetchTimeout,
            FetchError::Http { .. } => ErrorCode::FetchFailed,
            FetchError::TooManyRedirects { .. } => ErrorCode::TooManyRedirects,
            FetchError::Downgrade { .. } => ErrorCode::RedirectRefused,
            FetchError::OtherHost { .. } => ErrorCode::RedirectToOtherHost,
            FetchError::BadRedirect { .. } => ErrorCode::RedirectInvalid,
            FetchError::Unsupported { .. } => ErrorCode::UnsupportedContent,
            FetchError::Cancelled { .. } => ErrorCode::Cancelled,
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            FetchError::OtherHost { to, .. } | FetchError::Downgrade { to, .. } => {
                Some(json!({"location": to}))
            }
            FetchError::Address { addr, range, .. } => {
                Some(json!({"address": addr.to_string(), "range": range}))
            }
            _ => None,
        }
    }
}

/// The ports `web.fetch` may use: `PABLO_FETCH_ALLOWED_PORTS` (comma-separated), else 80 and 443.
/// A value that does not parse as a list of ports falls back to the default, with a note.
pub(crate) fn ports_from_env() -> (Vec<u16>, Option<String>) {
    match std::env::var(PORTS_ENV) {
        Ok(raw) => match parse_ports(&raw) {
            Some(ports) => (ports, None),
            None => (
                DEFAULT_PORTS.to_vec(),
                Some(format!(
                    "{PORTS_ENV}={raw:?} is not a comma-separated list of ports; web.fetch uses 80 and 443"
                )),
            ),
        },
        Err(_) => (DEFAULT_PORTS.to_vec(), None),
    }
}

/// `"80, 443,8080"` → `[80, 443, 8080]`; `None` for anything else (including port 0).
pub(crate) fn parse_ports(raw: &str) -> Option<Vec<u16>> {
    let mut out = Vec::new();
    for part in raw.split(',') {
        let port: u16 = part.trim().parse().ok()?;
        if port == 0 {
            return None;
        }
        if !out.contains(&port) {
            out.push(port);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The host of an admitted URL: an address to check, or a name to resolve and then check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TargetHost {
    Ip(IpAddr),
    /// Lowercase, without a trailing dot.
    Name(String),
}

/// A URL that passed the rules that need no lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) url: Url,
    pub(crate) host: TargetHost,
    pub(crate) port: u16,
}

impl Target {
    /// The host as shown to the person and matched against `allowed_domains`.
    pub(crate) fn host_text(&self) -> String {
        match &self.host {
            TargetHost::Ip(ip) => ip.to_string(),
            TargetHost::Name(n) => n.clone(),
        }
    }
}

/// Which addresses a fetcher may reach besides the public ones. Only tests construct anything
/// but [`Reach::Public`]; no config key, flag, environment variable or argument maps to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    #[default]
    Public,
    /// 127.0.0.1 exactly, for integration tests against a scripted server.
    PublicAndTestLoopback,
}

/// Parses `raw` and applies every rule that needs no lookup: scheme, credentials, port, local
/// names, and the address rules for a host written as an address.
pub(crate) fn admit(raw: &str, ports: &[u16], reach: Reach) -> Result<Target, FetchError> {
    let url = Url::parse(raw.trim()).map_err(|e| FetchError::InvalidUrl {
        url: raw.to_string(),
        reason: e.to_string(),
    })?;
    admit_as(url, raw.trim(), ports, reach)
}

/// [`admit`] for a URL already parsed (a redirect's location, resolved against the page).
pub(crate) fn admit_url(url: Url, ports: &[u16], reach: Reach) -> Result<Target, FetchError> {
    let written = url.to_string();
    admit_as(url, &written, ports, reach)
}

/// `written` is the URL as the model wrote it, for messages: `http://0x7f.1/` names 127.0.0.1.
fn admit_as(
    mut url: Url,
    written: &str,
    ports: &[u16],
    reach: Reach,
) -> Result<Target, FetchError> {
    let shown = url.to_string();
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme {
            url: shown,
            scheme: url.scheme().to_string(),
        });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::Userinfo { url: shown });
    }
    // The fragment never reaches the server; dropping it keeps previews and redirects exact.
    url.set_fragment(None);
    let port = url.port_or_known_default().unwrap_or(0);
    if !ports.contains(&port) {
        return Err(FetchError::Port {
            url: url.to_string(),
            port,
            allowed: ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let host = match url.host() {
        Some(url::Host::Ipv4(v4)) => TargetHost::Ip(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => TargetHost::Ip(IpAddr::V6(v6)),
        Some(url::Host::Domain(d)) => {
            TargetHost::Name(d.strip_suffix('.').unwrap_or(d).to_ascii_lowercase())
        }
        None => {
            return Err(FetchError::InvalidUrl {
                url: url.to_string(),
                reason: "it has no host".into(),
            });
        }
    };
    if let TargetHost::Name(name) = &host {
        // One spelling of the name everywhere: the request, the pin and the policy match.
        if name.is_empty()
            || url.host_str() != Some(name.as_str()) && url.set_host(Some(name)).is_err()
        {
            return Err(FetchError::InvalidUrl {
                url: url.to_string(),
                reason: "the host is empty".into(),
            });
        }
    }
    match &host {
        TargetHost::Ip(ip) => check_address(written, "names ", *ip, reach)?,
        TargetHost::Name(name) => {
            if let Some(rule) = local_name(name) {
                return Err(FetchError::LocalName {
                    host: name.clone(),
                    rule,
                });
            }
        }
    }
    Ok(Target { url, host, port })
}

/// Refuses `addr` unless it is public (or the test loopback `reach` allows). `via` reads
/// `"names "` for a URL written with an address and `"resolves to "` for a name.
pub(crate) fn check_address(
    host: &str,
    via: &'static str,
    addr: IpAddr,
    reach: Reach,
) -> Result<(), FetchError> {
    if reach == Reach::PublicAndTestLoopback && addr == IpAddr::V4(Ipv4Addr::LOCALHOST) {
        return Ok(());
    }
    match refused_range(addr) {
        None => Ok(()),
        Some(range) => Err(FetchError::Address {
            host: host.to_string(),
            via,
            addr,
            range,
        }),
    }
}

/// Names that are local by definition, refused before any lookup (a resolver may answer them
/// from anywhere: `/etc/hosts`, mDNS, a corporate split horizon). `None` for other names.
pub(crate) fn local_name(name: &str) -> Option<&'static str> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let under = |suffix: &str| {
        name == suffix
            || (name.len() > suffix.len()
                && name.ends_with(suffix)
                && name.as_bytes()[name.len() - suffix.len() - 1] == b'.')
    };
    if under("localhost") {
        Some("localhost and *.localhost name this machine")
    } else if under("local") {
        Some("*.local is multicast DNS on the local network")
    } else if under("internal") {
        Some("*.internal is reserved for private networks")
    } else if under("home.arpa") {
        Some("*.home.arpa is reserved for home networks")
    } else {
        None
    }
}

/// What to do with a redirect from `from` to `to`: follow it (same scheme-and-host, never a
/// downgrade to http), or report it.
pub(crate) fn redirect_rule(from: &Url, to: &Url) -> Result<(), FetchError> {
    if from.scheme() == "https" && to.scheme() == "http" {
        return Err(FetchError::Downgrade {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    let same_host = match (from.host(), to.host()) {
        (Some(a), Some(b)) => normalized(&a) == normalized(&b),
        _ => false,
    };
    if !same_host {
        return Err(FetchError::OtherHost {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    Ok(())
}

fn normalized(h: &url::Host<&str>) -> String {
    match h {
        url::Host::Domain(d) => d.strip_suffix('.').unwrap_or(d).to_ascii_lowercase(),
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => a.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Option<&'static str> {
        refused_v4(s.parse().unwrap())
    }

    fn v6(s: &str) -> Option<String> {
        refused_v6(s.parse().unwrap())
    }

    fn admitted(raw: &str) -> Result<Target, FetchError> {
        admit(raw, &DEFAULT_PORTS, Reach::Public)
    }

    fn code(r: Result<Target, FetchError>) -> &'static str {
        match r {
            Ok(_) => "ok",
            Err(e) => e.code().as_str(),
        }
    }

    #[test]
    fn every_refused_ipv4_range_is_refused_at_its_edges() {
        let cases = [
            ("0.0.0.0", "unspecified"),
            ("0.255.255.255", "this network"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.0.0.0", "private"),
            ("10.255.255.255", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.0.1", "private"),
            ("192.168.255.255", "private"),
            ("100.64.0.0", "carrier-grade NAT"),
            ("100.127.255.255", "carrier-grade NAT"),
            ("169.254.169.254", "link-local"),
            ("169.254.0.1", "link-local"),
            ("192.0.0.8", "IETF"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.255", "documentation"),
            ("192.88.99.1", "6to4"),
            ("198.18.0.0", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.255", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.254", "reserved"),
            ("255.255.255.255", "broadcast"),
        ];
        for (addr, word) in cases {
            let r = v4(addr).unwrap_or_else(|| panic!("{addr} was not refused"));
            assert!(r.contains(word), "{addr}: {r}");
        }
    }

    #[test]
    fn public_ipv4_neighbours_of_refused_ranges_are_allowed() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "203.0.112.255",
            "223.255.255.255",
        ] {
            assert_eq!(v4(addr), None, "{addr} should be public");
        }
    }

    #[test]
    fn every_refused_ipv6_range_is_refused() {
        let cases = [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fe80::1", "link-local"),
            ("febf:ffff::1", "link-local"),
            ("fec0::1", "site-local"),
            ("fc00::1", "unique local"),
            ("fdff:ffff::1", "unique local"),
            ("ff02::1", "multicast"),
            ("ff0e::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("2001:2::1", "benchmarking"),
            ("2001:10::1", "ORCHID"),
            ("2001:20::1", "ORCHID"),
            ("2001:100::1", "IETF"),
            ("100::1", "discard"),
            ("64:ff9b:1::1", "local-use NAT64"),
            ("5f00::1", "segment routing"),
            ("4000::1", "reserved"),
            ("1::1", "reserved"),
        ];
        for (addr, word) in cases {
            let r = v6(addr).unwrap_or_else(|| panic!("{addr} was not refused"));
            assert!(r.contains(word), "{addr}: {r}");
        }
    }

    #[test]
    fn ipv6_forms_embedding_a_refused_ipv4_address_are_refused() {
        let cases = [
            ("::ffff:127.0.0.1", "IPv4-mapped"),
            ("::ffff:7f00:1", "IPv4-mapped"),
            ("::ffff:169.254.169.254", "IPv4-mapped"),
            ("::ffff:10.0.0.1", "IPv4-mapped"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("::8.8.8.8", "IPv4-compatible"),
            ("64:ff9b::127.0.0.1", "NAT64"),
            ("64:ff9b::a9fe:a9fe", "NAT64"),
            ("64:ff9b::192.168.1.1", "NAT64"),
            ("2002:7f00:1::1", "6to4"),
            ("2002:a9fe:a9fe::1", "6to4"),
            ("2002:c0a8:101::", "6to4"),
            // Teredo server 127.0.0.1.
            ("2001:0:7f00:1::1", "Teredo"),
            // Teredo client 127.0.0.1, stored inverted: !0x7f00 = 0x80ff, !0x0001 = 0xfffe.
            ("2001:0:808:808::80ff:fffe", "Teredo"),
        ];
        for (addr, word) in cases {
            let r = v6(addr).unwrap_or_else(|| panic!("{addr} was not refused"));
            assert!(r.contains(word), "{addr}: {r}");
        }
    }

    #[test]
    fn ipv6_forms_embedding_a_public_ipv4_address_and_global_unicast_are_allowed() {
        for addr in [
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "2001:0:808:808::f7f7:f7f7",
            "2606:4700:4700::1111",
            "2a00:1450:4001:81b::200e",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(v6(addr), None, "{addr} should be public");
        }
    }

    #[test]
    fn numeric_host_spellings_are_parsed_as_the_addresses_they_are() {
        for raw in [
            "http://127.0.0.1/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0177.1/",
            "http://127.1/",
            "http://127.0.0.1./",
            "http://%31%32%37.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[0:0:0:0:0:ffff:7f00:1]/",
            "http://[::ffff:7f00:1]/",
        ] {
            let err = admitted(raw).expect_err(raw);
            assert_eq!(err.code(), "address_refused", "{raw}: {err}");
        }
        let e = admitted("http://0x7f.1/admin").unwrap_err();
        assert_eq!(
            e.to_string(),
            "http://0x7f.1/admin names 127.0.0.1, which is loopback (127.0.0.0/8); only public \
             addresses are fetched"
        );
        for (raw, meta) in [
            (
                "http://169.254.169.254/latest/meta-data/",
                "169.254.169.254",
            ),
            ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
            ("http://2852039166/", "169.254.169.254"),
            ("http://0251.0376.0251.0376/", "169.254.169.254"),
        ] {
            let err = admitted(raw).expect_err(raw);
            assert!(err.to_string().contains(meta), "{raw}: {err}");
            assert!(err.to_string().contains("link-local"), "{raw}: {err}");
        }
    }

    #[test]
    fn local_names_are_refused_without_a_lookup_and_lookalikes_are_not() {
        for raw in [
            "http://localhost/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://printer.local/",
            "http://metadata.google.internal/",
            "http://internal/",
            "http://router.home.arpa/",
            "http://%6c%6f%63%61%6c%68%6f%73%74/",
        ] {
            assert_eq!(code(admitted(raw)), "host_refused", "{raw}");
        }
        for raw in [
            "https://notlocalhost.com/",
            "https://localhost.example.com/",
            "https://internal.example.com/",
            "https://local.example/",
        ] {
            assert_eq!(code(admitted(raw)), "ok", "{raw}");
        }
    }

    #[test]
    fn schemes_credentials_and_ports_are_checked() {
        assert_eq!(code(admitted("ftp://example.com/")), "scheme_refused");
        assert_eq!(code(admitted("file:///etc/passwd")), "scheme_refused");
        assert_eq!(code(admitted("javascript:alert(1)")), "scheme_refused");
        assert_eq!(
            code(admitted("http://user@example.com/")),
            "userinfo_refused"
        );
        assert_eq!(
            code(admitted("https://user:pw@example.com/")),
            "userinfo_refused"
        );
        assert_eq!(
            code(admitted("https://:pw@example.com/")),
            "userinfo_refused"
        );
        assert_eq!(code(admitted("http://example.com:8080/")), "port_refused");
        assert_eq!(code(admitted("https://example.com:22/")), "port_refused");
        assert_eq!(code(admitted("https://example.com:443/x")), "ok");
        assert_eq!(code(admitted("http://example.com/")), "ok");
        assert_eq!(code(admitted("not a url")), "invalid_url");
        let ok = admit("http://example.com:8080/", &[8080], Reach::Public).unwrap();
        assert_eq!(ok.port, 8080);
    }

    #[test]
    fn the_fragment_is_dropped_and_the_host_is_lowercased() {
        let t = admitted("https://Docs.RS./a#frag").unwrap();
        assert_eq!(t.url.fragment(), None);
        assert_eq!(t.host, TargetHost::Name("docs.rs".into()));
    }

    #[test]
    fn the_test_loopback_reach_admits_only_127_0_0_1() {
        let t = Reach::PublicAndTestLoopback;
        assert!(admit("http://127.0.0.1:80/", &[80], t).is_ok());
        for raw in [
            "http://127.0.0.2/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/",
            "http://10.0.0.1/",
            "http://localhost/",
        ] {
            assert!(admit(raw, &[80], t).is_err(), "{raw}");
        }
    }

    #[test]
    fn ports_parse_from_a_comma_separated_list() {
        assert_eq!(parse_ports("80,443"), Some(vec![80, 443]));
        assert_eq!(parse_ports(" 8080 , 80 ,8080"), Some(vec![8080, 80]));
        assert_eq!(parse_ports(""), None);
        assert_eq!(parse_ports("80,http"), None);
        assert_eq!(parse_ports("0"), None);
        assert_eq!(parse_ports("70000"), None);
    }

    #[test]
    fn redirects_follow_only_the_same_host_and_never_downgrade() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(redirect_rule(&u("https://a.com/x"), &u("https://a.com/y")).is_ok());
        assert!(redirect_rule(&u("http://a.com/x"), &u("https://A.com./y")).is_ok());
        assert_eq!(
            redirect_rule(&u("https://a.com/x"), &u("http://a.com/y"))
                .unwrap_err()
                .code(),
            "redirect_refused"
        );
        assert_eq!(
            redirect_rule(&u("https://a.com/x"), &u("https://b.com/y"))
                .unwrap_err()
                .code(),
            "redirect_to_other_host"
        );
        assert_eq!(
            redirect_rule(&u("https://a.com/x"), &u("https://sub.a.com/y"))
                .unwrap_err()
                .code(),
            "redirect_to_other_host"
        );
    }
}
