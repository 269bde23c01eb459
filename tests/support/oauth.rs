//! An MCP server that asks for OAuth sign-in, and the authorization server it trusts, both on
//! 127.0.0.1 and both written here (scripted HTTP servers answering from shared state), so a
//! test sees every request the client made and decides every answer.
//!
//! The authorization server publishes RFC 8414 metadata, registers clients (RFC 7591), answers
//! `/authorize` as a person who consents would (a redirect with a code), and grants tokens for a
//! code whose PKCE verifier matches its S256 challenge, or for a refresh token, unless told to
//! refuse refreshes. The MCP server publishes RFC 9728 protected resource metadata, answers 401
//! with a challenge to any request without a token it accepts, and otherwise speaks streamable
//! HTTP with JSON answers: one tool, `whoami`.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::http::{RecordedRequest, ScriptedResponse, ScriptedServer};

/// What both servers share: the tokens granted and which still count.
#[derive(Default)]
pub struct Grants {
    /// Code → (client id, S256 challenge, redirect URI).
    codes: Vec<(String, String, String, String)>,
    /// Access tokens the MCP server takes.
    pub valid: Vec<String>,
    /// Refresh tokens the authorization server takes.
    refresh: Vec<String>,
    /// Refuse every refresh (`invalid_grant`).
    pub refuse_refresh: bool,
    /// Tokens granted so far (the next one is numbered after them).
    issued: usize,
    clients: usize,
}

/// The pair of servers.
pub struct OAuthServers {
    pub auth: ScriptedServer,
    pub mcp: ScriptedServer,
    pub grants: Arc<Mutex<Grants>>,
}

/// The access token of the `n`th grant: long and distinctive, so a test finds it anywhere it
/// leaked to.
pub fn access_token(n: usize) -> String {
    format!("access-{n}-9f8e7d6c5b4a39281706f5e4d3c2b1a0")
}

pub fn refresh_token(n: usize) -> String {
    format!("refresh-{n}-0a1b2c3d4e5f60718293a4b5c6d7e8f9")
}

fn query(path: &str) -> Vec<(String, String)> {
    let q = path.split_once('?').map(|(_, q)| q).unwrap_or_default();
    url::form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The value of `name` among `pairs`.
pub fn param(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

impl OAuthServers {
    pub async fn start() -> Self {
        let auth = ScriptedServer::start().await;
        let mcp = ScriptedServer::start().await;
        let grants = Arc::new(Mutex::new(Grants::default()));
        let issuer = auth.url();
        let resource = format!("{}/mcp", mcp.url());
        {
            let grants = grants.clone();
            let issuer = issuer.clone();
            let resource = resource.clone();
            auth.respond_with(move |r, _| authorization_server(r, &issuer, &resource, &grants));
        }
        {
            let grants = grants.clone();
            let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", mcp.url());
            mcp.respond_with(move |r, _| {
                resource_server(r, &resource, &issuer, &metadata, &grants)
            });
        }
        Self { auth, mcp, grants }
    }

    /// The MCP endpoint (what `url =` names).
    pub fn url(&self) -> String {
        format!("{}/mcp", self.mcp.url())
    }

    /// The MCP server stops taking `token` (revoked, or expired on its side).
    pub fn revoke(&self, token: &str) {
        self.grants.lock().unwrap().valid.retain(|t| t != token);
    }

    /// The requests the authorization server got at `path` (without the query).
    pub fn auth_requests(&self, path: &str) -> Vec<RecordedRequest> {
        self.auth
            .requests()
            .into_iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .collect()
    }

    /// The form of each token request, in order.
    pub fn token_requests(&self) -> Vec<Vec<(String, String)>> {
        self.auth_requests("/token")
            .iter()
            .map(|r| form(&r.body))
            .collect()
    }

    /// The bearer token of each request to the MCP endpoint (`None` for one without).
    pub fn bearers(&self) -> Vec<Option<String>> {
        self.mcp
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/mcp"))
            .map(|r| {
                r.header("authorization")
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .map(str::to_string)
            })
            .collect()
    }
}

fn authorization_server(
    r: &RecordedRequest,
    issuer: &str,
    resource: &str,
    grants: &Mutex<Grants>,
) -> ScriptedResponse {
    let path = r.path.split('?').next().unwrap_or_default();
    match (r.method.as_str(), path) {
        ("GET", "/.well-known/oauth-authorization-server") => ScriptedResponse::json(
            200,
            &json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["notes"],
            }),
        ),
        ("POST", "/register") => {
            let body = r.json();
            let mut g = grants.lock().unwrap();
            g.clients += 1;
            ScriptedResponse::json(
                201,
                &json!({
                    "client_id": format!("client-{}", g.clients),
                    "redirect_uris": body["redirect_uris"],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                }),
            )
        }
        ("GET", "/authorize") => {
            let q = query(&r.path);
            let ok = param(&q, "response_type").as_deref() == Some("code")
                && param(&q, "code_challenge_method").as_deref() == Some("S256")
                && param(&q, "resource").as_deref() == Some(resource);
            let (Some(client), Some(challenge), Some(redirect), Some(state)) = (
                param(&q, "client_id"),
                param(&q, "code_challenge"),
                param(&q, "redirect_uri"),
                param(&q, "state"),
            ) else {
                return ScriptedResponse::json(400, &json!({"error": "invalid_request"}));
            };
            if !ok {
                return ScriptedResponse::json(400, &json!({"error": "invalid_request"}));
            }
            let mut g = grants.lock().unwrap();
            let code = format!("code-{}", g.codes.len() + 1);
            g.codes
                .push((code.clone(), client, challenge, redirect.clone()));
            let location = format!(
                "{redirect}?code={code}&state={}",
                url::form_urlencoded::byte_serialize(state.as_bytes()).collect::<String>()
            );
            ScriptedResponse::new(302).header("location", &location)
        }
        ("POST", "/token") => token(&form(&r.body), resource, grants),
        _ => ScriptedResponse::json(404, &json!({"error": "not_found"})),
    }
}

fn token(f: &[(String, String)], resource: &str, grants: &Mutex<Grants>) -> ScriptedResponse {
    let refused = |error: &str| ScriptedResponse::json(400, &json!({"error": error}));
    if param(f, "resource").as_deref() != Some(resource) {
        return refused("invalid_target");
    }
    let mut g = grants.lock().unwrap();
    match param(f, "grant_type").as_deref() {
        Some("authorization_code") => {
            let code = param(f, "code").unwrap_or_default();
            let Some(pos) = g.codes.iter().position(|c| c.0 == code) else {
                return refused("invalid_grant");
            };
            let (_, client, challenge, redirect) = g.codes.remove(pos);
            let verifier = param(f, "code_verifier").unwrap_or_default();
            let s256 = {
                use base64::Engine;
                use sha2::Digest;
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(verifier.as_bytes()))
            };
            if s256 != challenge
                || param(f, "client_id").as_deref() != Some(client.as_str())
                || param(f, "redirect_uri").as_deref() != Some(redirect.as_str())
            {
                return refused("invalid_grant");
            }
        }
        Some("refresh_token") => {
            let presented = param(f, "refresh_token").unwrap_or_default();
            if g.refuse_refresh || !g.refresh.contains(&presented) {
                return refused("invalid_grant");
            }
            g.refresh.retain(|t| *t != presented);
        }
        _ => return refused("unsupported_grant_type"),
    }
    g.issued += 1;
    let n = g.issued;
    g.valid.push(access_token(n));
    g.refresh.push(refresh_token(n));
    ScriptedResponse::json(
        200,
        &json!({
            "access_token": access_token(n),
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": refresh_token(n),
            "scope": "notes",
        }),
    )
}

fn resource_server(
    r: &RecordedRequest,
    resource: &str,
    issuer: &str,
    metadata: &str,
    grants: &Mutex<Grants>,
) -> ScriptedResponse {
    let path = r.path.split('?').next().unwrap_or_default();
    if r.method == "GET" && path.starts_with("/.well-known/oauth-protected-resource") {
        return ScriptedResponse::json(
            200,
            &json!({
                "resource": resource,
                "authorization_servers": [issuer],
                "scopes_supported": ["notes"],
                "bearer_methods_supported": ["header"],
            }),
        );
    }
    if path != "/mcp" {
        return ScriptedResponse::json(404, &json!({"error": "not_found"}));
    }
    let bearer = r
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "));
    let accepted = bearer.is_some_and(|t| grants.lock().unwrap().valid.iter().any(|v| v == t));
    if !accepted {
        let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
        if bearer.is_some() {
            challenge.push_str(", error=\"invalid_token\"");
        }
        return ScriptedResponse::json(401, &json!({"error": "unauthorized"}))
            .header("www-authenticate", &challenge);
    }
    match r.method.as_str() {
        "POST" => mcp_message(&r.json()),
        "DELETE" => ScriptedResponse::new(200),
        _ => ScriptedResponse::new(405),
    }
}

/// One JSON-RPC message of the client, answered as a JSON body (or 202 for a notification).
fn mcp_message(m: &Value) -> ScriptedResponse {
    let Some(id) = m.get("id").cloned() else {
        return ScriptedResponse::new(202);
    };
    let result = match m["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "notes", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says that the caller is signed in.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => json!({
            "content": [{"type": "text", "text": "you are signed in to notes"}],
            "isError": false,
        }),
        "ping" => json!({}),
        other => {
            return ScriptedResponse::json(
                200,
                &json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("no method {other}")}}),
            );
        }
    };
    ScriptedResponse::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
        .header("mcp-session-id", "session-1")
}

/// A GET of `url` as a browser sends it, without following a redirect: the status, the
/// `Location` header and the body.
pub async fn browser_get(url: &str) -> (u16, Option<String>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let parsed = url::Url::parse(url).expect("an http URL");
    let host = parsed.host_str().expect("a host");
    let port = parsed.port().expect("a port");
    let target = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_string(),
    };
    let mut sock = tokio::net::TcpStream::connect((host, port))
        .await
        .expect("connects");
    let request =
        format!("GET {target} HTTP/1.1\r\nhost: {host}:{port}\r\nconnection: close\r\n\r\n");
    sock.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = head.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.trim().to_string())
    });
    (status, location, body.to_string())
}
