//! The network allow-list of sandboxed commands: a small HTTP proxy of pablo's that a command
//! with no network of its own reaches, and that connects only to the hosts of `[options.shell]
//! network_allow`.
//!
//! A `workspace-write` command with the network cut runs in a network namespace of its own,
//! whose only interface is a loopback. When the allow-list is not empty, the command's init
//! opens a TCP listener on 127.0.0.1:[`PROXY_PORT`] inside that namespace and hands the socket to
//! pablo ([`super::proxyport`]); pablo accepts on it here, in its own namespace, and nothing else
//! in the command's namespace leads out. A program that honours the proxy variables
//! ([`set_proxy_env`]) asks the proxy for a host by name; a program that ignores them reaches
//! nothing. The proxy:
//! - takes `CONNECT host:port` (TLS passes through untouched: nothing is decrypted) and requests
//!   in absolute form (`GET http://host/path`), which it forwards with `Connection: close`;
//! - decides by the host as the client wrote it: a name must be listed (`*.x` lists the names
//!   below `x`), an address must be listed as that address;
//! - resolves a listed name itself and reaches whatever address it has, the loopback included
//!   (local registries, tests), except a cloud metadata address unless that address is listed
//!   ([`super::addresses::metadata_range`]);
//! - answers a refusal with 403 and a line naming the host, and keeps every decision, so that
//!   the command's result can name what was refused.
//!
//! Written by hand rather than with a proxy crate: it is two request forms and a byte copy, and
//! the one decision that matters (which host) must be the one made here, before any connection.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use pablo_config::NetAllowEntry;

/// The port the proxy listens on inside the command's network namespace. The namespace is new
/// and empty, so the port is always free there; it is the conventional proxy port.
pub const PROXY_PORT: u16 = 3128;

/// The most a request's head may take (request line and headers).
const MAX_HEAD_BYTES: usize = 32 * 1024;
/// How long a client may take to send its request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most decisions kept for one command (a command that opens more still gets answers).
const MAX_KEPT: usize = 1000;

/// The variables that point every common client at the proxy (curl, pip, cargo, npm, git, go):
/// both spellings, and no `NO_PROXY`, which would send some hosts around the proxy (into a
/// network that is not there).
pub fn set_proxy_env(env: &mut Vec<(String, String)>) {
    const NAMES: [&str; 8] = [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ];
    env.retain(|(k, _)| !NAMES.contains(&k.as_str()));
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    for name in &NAMES[..6] {
        env.push(((*name).to_string(), url.clone()));
    }
}

/// What the proxy decided about one connection a command asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The host as the client wrote it (a name lowercased, an address in its usual form).
    pub host: String,
    pub port: u16,
    pub allowed: bool,
}

/// The proxy of one command: it serves until dropped (when the command has ended).
pub struct Proxy {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    decisions: Arc<Mutex<Vec<Decision>>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").finish_non_exhaustive()
    }
}

impl Proxy {
    /// The hosts refused so far, each once, in the order first asked for.
    pub fn refused_hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in self.decisions.lock().iter().filter(|d| !d.allowed) {
            if !out.contains(&d.host) {
                out.push(d.host.clone());
            }
        }
        out
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves `listener` (a listening TCP socket in the command's network namespace) under `allow`
/// on a thread of its own, until the returned [`Proxy`] is dropped.
pub fn serve(listener: OwnedFd, allow: Vec<NetAllowEntry>) -> std::io::Result<Proxy> {
    let listener = std::net::TcpListener::from(listener);
    listener.set_nonblocking(true)?;
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let kept = decisions.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let allow: Arc<[NetAllowEntry]> = allow.into();
    std::thread::Builder::new()
        .name("pablo-netproxy".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                loop {
                    tokio::select! {
                        _ = &mut stop_rx => break,
                        accepted = listener.accept() => {
                            let Ok((client, _)) = accepted else { continue };
                            tokio::spawn(connection(client, allow.clone(), kept.clone()));
                        }
                    }
                }
            });
            // Dropping the runtime ends the connections still open: the command is gone.
        })?;
    Ok(Proxy {
        stop: Some(stop_tx),
        decisions,
    })
}

/// Starts the proxy for `allow` on the listener a command's init sent, when it sent one.
/// Without the proxy the command still runs, with no network at all, which is what it would get
/// from a proxy that is not there.
pub fn serve_sent(listener: Option<OwnedFd>, allow: &[NetAllowEntry]) -> Option<Proxy> {
    match serve(listener?, allow.to_vec()) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!("the sandbox's network proxy could not start: {e}");
            None
        }
    }
}

/// A request's target: the host as written and the port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    host: Host,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Name(String),
    Address(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Address(a) => write!(f, "{a}"),
        }
    }
}

/// What a client asked for: a tunnel, or one plain-HTTP request (rewritten to origin form).
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Connect(Target),
    Forward { target: Target, head: Vec<u8> },
}

/// Parses a request's head (up to the blank line). `Err` is the reason for a 400.
fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text".to_string())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("{first:?} is not a request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("{version} is not HTTP/1.x"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        if target.contains(['/', '@', '?', '#']) || !target.contains(':') {
            return Err(format!("CONNECT needs host:port, not {target:?}"));
        }
        let url = url::Url::parse(&format!("http://{target}/"))
            .map_err(|e| format!("{target:?} is not host:port: {e}"))?;
        return Ok(Request::Connect(target_of(&url)?));
    }
    let url = url::Url::parse(target)
        .map_err(|_| format!("{target:?} is not an absolute http:// URL (is this a proxy?)"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "{target:?}: only http:// is forwarded; https goes through CONNECT"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a URL with a user name or password is not forwarded".into());
    }
    let target_of_url = target_of(&url)?;
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        let hop = [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ];
        if !hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    // One request per connection: a second one on it could name another host.
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request::Forward {
        target: target_of_url,
        head: out.into_bytes(),
    })
}

fn target_of(url: &url::Url) -> Result<Target, String> {
    let host = match url.host() {
        Some(url::Host::Domain(d)) => {
            Host::Name(d.strip_suffix('.').unwrap_or(d).to_ascii_lowercase())
        }
        Some(url::Host::Ipv4(a)) => Host::Address(IpAddr::V4(a)),
        Some(url::Host::Ipv6(a)) => Host::Address(IpAddr::V6(a)),
        None => return Err("the request names no host".into()),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| "the request names no port".to_string())?;
    Ok(Target { host, port })
}

/// Whether `allow` lists `host`: a name exactly or below a `*.` entry, an address exactly.
fn listed(allow: &[NetAllowEntry], host: &Host) -> bool {
    allow.iter().any(|e| match (e, host) {
        (NetAllowEntry::Name(n), Host::Name(h)) => n == h,
        (NetAllowEntry::Below(n), Host::Name(h)) => {
            h.len() > n.len() + 1
                && h.ends_with(n.as_str())
                && h.as_bytes()[h.len() - n.len() - 1] == b'.'
        }
        (NetAllowEntry::Address(a), Host::Address(h)) => a == h,
        _ => false,
    })
}

/// The addresses an allowed target may be reached at, or why it is refused (the 403's reason).
async fn admit(allow: &[NetAllowEntry], target: &Target) -> Result<Vec<SocketAddr>, String> {
    if !listed(allow, &target.host) {
        return Err(match target.host {
            Host::Address(_) => "the address is not in [options.shell] network_allow (an \
                                 address is reached only when it is listed itself)"
                .into(),
            Host::Name(_) => "the host is not in [options.shell] network_allow".into(),
        });
    }
    let name = match &target.host {
        Host::Address(a) => return Ok(vec![SocketAddr::new(*a, target.port)]),
        Host::Name(n) => n,
    };
    let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), target.port))
        .await
        .map_err(|e| format!("the host could not be resolved: {e}"))?
        .collect();
    let mut why = None;
    let usable: Vec<SocketAddr> = found
        .into_iter()
        .filter(|a| {
            let range = super::addresses::metadata_range(a.ip());
            let listed_itself = listed(allow, &Host::Address(a.ip()));
            if let Some(r) = range.filter(|_| !listed_itself) {
                why = Some(format!("it resolves to {}, which is {r}", a.ip()));
                return false;
            }
            true
        })
        .collect();
    match (usable.is_empty(), why) {
        (true, Some(w)) => Err(w),
        (true, None) => Err("the host has no address".into()),
        (false, _) => Ok(usable),
    }
}

/// Reads up to the end of the head; returns the head and whatever came after it.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err("the request's head is too long".into());
        }
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Err("the client closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(client: &mut TcpStream, status: &str, why: &str) {
    let body = format!("pablo: {why}\n");
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// One client connection, from its request to the end of the copy.
async fn connection(
    mut client: TcpStream,
    allow: Arc<[NetAllowEntry]>,
    decisions: Arc<Mutex<Vec<Decision>>>,
) {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(h)) => h,
        Ok(Err(why)) => return answer(&mut client, "400 Bad Request", &why).await,
        Err(_) => return answer(&mut client, "408 Request Timeout", "no request came").await,
    };
    let request = match parse_head(&head) {
        Ok(r) => r,
        Err(why) => return answer(&mut client, "400 Bad Request", &why).await,
    };
    let (target, forward) = match request {
        Request::Connect(t) => (t, None),
        Request::Forward { target, head } => (target, Some(head)),
    };
    let admitted = admit(&allow, &target).await;
    let decision = Decision {
        host: target.host.to_string(),
        port: target.port,
        allowed: admitted.is_ok(),
    };
    tracing::info!(
        host = %decision.host,
        port = decision.port,
        allowed = decision.allowed,
        "sandbox network proxy"
    );
    {
        let mut kept = decisions.lock();
        if kept.len() < MAX_KEPT {
            kept.push(decision);
        }
    }
    let addrs = match admitted {
        Ok(a) => a,
        Err(why) => {
            let line = format!("{} refused: {why}", target.host);
            return answer(&mut client, "403 Forbidden", &line).await;
        }
    };
    let connect = TcpStream::connect(&addrs[..]);
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(u)) => u,
        Ok(Err(e)) => {
            let line = format!("cannot connect to {}:{}: {e}", target.host, target.port);
            return answer(&mut client, "502 Bad Gateway", &line).await;
        }
        Err(_) => {
            let line = format!("connecting to {} timed out", target.host);
            return answer(&mut client, "504 Gateway Timeout", &line).await;
        }
    };
    let sent = match forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(head) => upstream.write_all(&head).await,
    };
    if sent.is_err() || upstream.write_all(&rest).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[&str]) -> Vec<NetAllowEntry> {
        list.iter()
            .map(|e| NetAllowEntry::parse(e).unwrap())
            .collect()
    }

    fn name(n: &str) -> Host {
        Host::Name(n.into())
    }

    #[test]
    fn a_wildcard_lists_the_names_below_it_and_a_name_only_itself() {
        let allow = entries(&["crates.io", "*.pypi.org", "10.0.0.5"]);
        assert!(listed(&allow, &name("crates.io")));
        assert!(!listed(&allow, &name("static.crates.io")));
        assert!(listed(&allow, &name("files.pypi.org")));
        assert!(listed(&allow, &name("a.b.pypi.org")));
        assert!(!listed(&allow, &name("pypi.org")));
        assert!(!listed(&allow, &name("evilpypi.org")));
        assert!(listed(&allow, &Host::Address("10.0.0.5".parse().unwrap())));
        assert!(!listed(&allow, &Host::Address("10.0.0.6".parse().unwrap())));
        // A listed name does not list the address it resolves to, nor the other way round.
        assert!(!listed(
            &entries(&["localhost"]),
            &Host::Address("127.0.0.1".parse().unwrap())
        ));
        assert!(!listed(&entries(&["127.0.0.1"]), &name("localhost")));
    }

    #[test]
    fn connect_and_absolute_requests_parse_to_their_host_and_port() {
        let r = parse_head(b"CONNECT Crates.IO:443 HTTP/1.1\r\nHost: crates.io:443\r\n\r\n");
        assert_eq!(
            r.unwrap(),
            Request::Connect(Target {
                host: name("crates.io"),
                port: 443
            })
        );
        let r = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Request::Connect(Target {
                host: Host::Address("::1".parse().unwrap()),
                port: 8443
            })
        );
        // Other spellings of an address are the address.
        let Request::Forward { target, head } = parse_head(
            b"GET http://0x7f.1:8080/a?b=c HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n",
        )
        .unwrap() else {
            panic!("not a forward")
        };
        assert_eq!(target.host, Host::Address("127.0.0.1".parse().unwrap()));
        assert_eq!(target.port, 8080);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn malformed_requests_are_refused_with_a_reason() {
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"CONNECT crates.io HTTP/1.1\r\n\r\n",
            b"CONNECT user@crates.io:443 HTTP/1.1\r\n\r\n",
            b"GET ftp://x/ HTTP/1.1\r\n\r\n",
            b"GET http://u:p@x/ HTTP/1.1\r\n\r\n",
            b"NONSENSE\r\n\r\n",
        ] {
            assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn a_listed_name_is_reached_but_not_at_a_metadata_address_unless_that_is_listed() {
        let t = |host: &str| Target {
            host: Host::Address(host.parse().unwrap()),
            port: 80,
        };
        let allow = entries(&["localhost", "169.254.169.254"]);
        let got = admit(
            &allow,
            &Target {
                host: name("localhost"),
                port: 9,
            },
        )
        .await
        .unwrap();
        assert!(got.iter().all(|a| a.ip().is_loopback()), "{got:?}");
        assert!(admit(&allow, &t("169.254.169.254")).await.is_ok());
        assert!(admit(&allow, &t("127.0.0.1")).await.is_err());
        let err = admit(
            &allow,
            &Target {
                host: name("example.com"),
                port: 80,
            },
        )
        .await;
        assert!(err.unwrap_err().contains("network_allow"));
    }

    #[test]
    fn the_proxy_variables_replace_any_the_command_had_and_no_proxy_goes() {
        let mut env = vec![
            ("NO_PROXY".to_string(), "*".to_string()),
            ("https_proxy".to_string(), "http://elsewhere".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        set_proxy_env(&mut env);
        assert!(!env.iter().any(|(k, _)| k.eq_ignore_ascii_case("no_proxy")));
        let https: Vec<_> = env.iter().filter(|(k, _)| k == "https_proxy").collect();
        assert_eq!(https.len(), 1);
        assert_eq!(https[0].1, "http://127.0.0.1:3128");
        assert!(env.iter().any(|(k, _)| k == "ALL_PROXY"));
    }
}
