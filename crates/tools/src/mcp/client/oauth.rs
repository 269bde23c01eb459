//! Signing in to an HTTP MCP server with OAuth 2.1, as the MCP specification's authorization
//! section describes, through the SDK's own implementation (`rmcp`'s `auth` feature).
//!
//! The SDK does the protocol: protected resource metadata (RFC 9728) from the server's
//! `WWW-Authenticate` challenge or its well-known address, authorization server metadata
//! (RFC 8414, then OpenID discovery), dynamic client registration (RFC 7591) when no client id
//! is configured, the authorization code flow with PKCE (S256) and the `resource` indicator
//! (RFC 8707), the exchange of the code against the state it sent, and refreshing a token that
//! expired or that the server refused. pablo adds what is its own: where the tokens are kept
//! ([`TokenStore`], one 0600 file per server under pablo's data directory, bound to the server's
//! URL), the loopback listener that receives the browser's redirect ([`login`]), and telling the
//! hub when a refresh was refused so the server reads as needing sign-in again.
//!
//! Tokens never reach a log, the journal or telemetry: the store is the only place they are
//! written, and every token it reads or writes is added to the values redacted from tool output
//! (`core::secrets`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::chain;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How one HTTP server signs in, as the launch settled it.
#[derive(Debug, Clone)]
pub struct OAuthSpec {
    /// The file its tokens are kept in (`$XDG_DATA_HOME/pablo/mcp-auth/NAME.json`).
    pub store: PathBuf,
    /// A client id registered out of band (`oauth.client_id`); otherwise pablo registers.
    pub client_id: Option<String>,
    /// The scopes to ask for (`oauth.scopes`); otherwise those the server names.
    pub scopes: Vec<String>,
}

/// Why `pablo mcp login` did not sign in. Every one is `mcp_login_failed`.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "{url} answered without asking for sign-in and publishes no OAuth metadata; it needs no \
         login"
    )]
    NotProtected { url: String },
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("discovering how to sign in failed: {0}")]
    Discovery(String),
    #[error("the sign-in could not start: {0}")]
    Start(String),
    #[error("cannot listen for the browser on 127.0.0.1: {0}")]
    Listen(String),
    #[error("the authorization server refused the sign-in: {0}")]
    Refused(String),
    #[error("the browser did not come back within {0} s")]
    NoCallback(u64),
    #[error("exchanging the code for a token failed: {0}")]
    Exchange(String),
}

/// What is kept for one server: the URL the tokens were issued for (a server configured at
/// another URL never gets them) and the SDK's credentials (client id, tokens, scopes, issuer).
#[derive(Serialize, Deserialize)]
struct TokenFile {
    url: String,
    credentials: StoredCredentials,
}

/// The one file of one server's tokens (0600 in a 0700 directory), as the SDK's credential
/// store. A refresh token the authorization server rejects is forgotten, and the flag the hub
/// reads says the server needs sign-in again.
#[derive(Clone)]
pub struct TokenStore {
    path: PathBuf,
    url: String,
    rejected: Arc<AtomicBool>,
}

impl TokenStore {
    pub(crate) fn new(path: &Path, url: &str) -> Self {
        Self {
            path: path.to_path_buf(),
            url: url.to_string(),
            rejected: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the authorization server refused the refresh token since this store was made.
    pub(crate) fn refresh_rejected(&self) -> bool {
        self.rejected.load(Ordering::Relaxed)
    }

    /// The credentials kept for this URL, if any (another URL's are not these).
    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let file: TokenFile = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a token file: {e}", self.path.display()))?;
        if file.url != self.url {
            return Ok(None);
        }
        redact_tokens(&file.credentials);
        Ok(Some(file.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        redact_tokens(&credentials);
        let file = TokenFile {
            url: self.url.clone(),
            credentials,
        };
        let text = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        write_private(&self.path, &text)
    }

    /// Forgets the tokens; `Ok(false)` when none were kept.
    pub fn forget(path: &Path) -> Result<bool, String> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        Self::forget(&self.path)
            .map(|_| ())
            .map_err(AuthError::CredentialStoreError)
    }

    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.rejected.store(true, Ordering::Relaxed);
        tracing::warn!(path = %self.path.display(), "mcp refresh token rejected; tokens forgotten");
        Self::forget(&self.path)
            .map(|_| ())
            .map_err(AuthError::CredentialStoreError)
    }
}

/// Adds the access and refresh tokens of `credentials` to the values redacted from every tool
/// result (read from the JSON form: the token types belong to the SDK's OAuth crate).
fn redact_tokens(credentials: &StoredCredentials) {
    let Some(response) = credentials
        .token_response
        .as_ref()
        .and_then(|r| serde_json::to_value(r).ok())
    else {
        return;
    };
    for key in ["access_token", "refresh_token"] {
        if let Some(token) = response.get(key).and_then(Value::as_str) {
            pablo_core::secrets::add_value(token);
        }
    }
}

/// Writes `bytes` to `path` readable by its owner only: a new file beside it (0600), renamed
/// over it, in a directory made 0700.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no directory", path.display()))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(())
}

/// An authorization manager for `url` whose HTTP client is the SDK's own (it follows no
/// redirect on token requests and keeps discovery away from private addresses unless the server
/// itself is on one), with rustls' provider installed first.
async fn manager_for(url: &str) -> Result<AuthorizationManager, AuthError> {
    // Builds (once) pablo's client, which installs the TLS provider the SDK's client needs.
    let _ = pablo_model::http::client_for(url);
    AuthorizationManager::new(url).await
}

/// The HTTP client that sends the server's requests with the kept access token (refreshing it
/// when it expired or when the server refuses it), or `None` when no token is kept for this
/// URL: the server is then reached without one, and a 401 means it needs sign-in.
pub(crate) async fn signed_in(
    url: &str,
    spec: &OAuthSpec,
    http: reqwest::Client,
) -> Result<Option<(AuthClient<reqwest::Client>, TokenStore)>, AuthError> {
    let store = TokenStore::new(&spec.store, url);
    if store
        .read()
        .map_err(AuthError::CredentialStoreError)?
        .is_none_or(|c| c.token_response.is_none())
    {
        return Ok(None);
    }
    let mut manager = manager_for(url).await?;
    manager.set_credential_store(store.clone());
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    Ok(Some((AuthClient::new(http, manager), store)))
}

/// How long `pablo mcp login` waits for the browser.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Signs in to the server at `url`: asks it for its challenge, discovers its authorization
/// server, registers pablo there when no client id is configured, shows the address to open
/// (`show` gets it and the redirect address pablo listens on), waits up to `wait` for the
/// browser to come back to 127.0.0.1 with the code and the state pablo sent, and exchanges the
/// code for tokens, which are kept in the store of `spec`.
pub async fn login(
    url: &str,
    spec: &OAuthSpec,
    wait: Duration,
    show: impl FnOnce(&str, &str),
) -> Result<(), LoginError> {
    let challenge = challenge_of(url).await?;
    let mut manager = manager_for(url)
        .await
        .map_err(|e| LoginError::Discovery(e.to_string()))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| LoginError::Discovery(chain(&e)))?;
    if challenge.is_none() && !resolution.source.is_discovered() {
        return Err(LoginError::NotProtected {
            url: url.to_string(),
        });
    }
    manager.set_metadata(resolution.metadata);
    manager.set_credential_store(TokenStore::new(&spec.store, url));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| LoginError::Listen(e.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|e| LoginError::Listen(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut request = AuthorizationRequest::new(redirect.clone()).with_client_name("pablo");
    if let Some(id) = &spec.client_id {
        request = request.with_preregistered_client(id.clone());
    }
    request = if spec.scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(spec.scopes.clone())
    };
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| LoginError::Start(chain(&e)))?;
    let address = session.get_authorization_url().to_string();
    let state = url::Url::parse(&address)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| LoginError::Start("the authorization address has no state".into()))?;
    show(&address, &redirect);
    let back = tokio::time::timeout(wait, receive_redirect(&listener, &state))
        .await
        .map_err(|_| LoginError::NoCallback(wait.as_secs()))??;
    session
        .handle_callback_url(&back)
        .await
        .map_err(|e| LoginError::Exchange(chain(&e)))?;
    Ok(())
}

/// The server's `WWW-Authenticate` challenge to a request without a token (an `initialize`),
/// or `None` when it answered without one.
async fn challenge_of(url: &str) -> Result<Option<String>, LoginError> {
    let unreachable = |message: String| LoginError::Unreachable {
        url: url.to_string(),
        message,
    };
    let client = pablo_model::http::client_for(url).map_err(|e| unreachable(e.to_string()))?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "pablo", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let response = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| unreachable(chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        let header = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("Bearer")
            .to_string();
        return Ok(Some(header));
    }
    // A server that opened a session for the probe is told it is over.
    if let Some(session) = response.headers().get("mcp-session-id").cloned() {
        let _ = client
            .delete(url)
            .header("mcp-session-id", session)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
    }
    Ok(None)
}

/// Waits on `listener` for the browser's redirect to `/callback` carrying `state`: the whole
/// redirect address (the SDK reads the code and the issuer from it). A request with another
/// state is refused and waiting goes on (it is not the sign-in pablo started); an error from the
/// authorization server ends the sign-in.
async fn receive_redirect(listener: &TcpListener, state: &str) -> Result<String, LoginError> {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let Some(target) = request_target(&mut sock).await else {
            continue;
        };
        let Ok(address) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
            respond(&mut sock, 400, "pablo could not read this address.").await;
            continue;
        };
        if address.path() != "/callback" {
            respond(&mut sock, 404, "Nothing here.").await;
            continue;
        }
        let param = |name: &str| {
            address
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if param("state").as_deref() != Some(state) {
            respond(
                &mut sock,
                400,
                "This is not the sign-in pablo started (its state does not match); it was \
                 ignored.",
            )
            .await;
            continue;
        }
        if let Some(error) = param("error") {
            let why = match param("error_description") {
                Some(d) => format!("{error}: {d}"),
                None => error,
            };
            respond(&mut sock, 200, "The sign-in was refused; pablo says why.").await;
            return Err(LoginError::Refused(why));
        }
        if param("code").is_none() {
            respond(&mut sock, 400, "The redirect carries no code.").await;
            continue;
        }
        respond(
            &mut sock,
            200,
            "Signed in: pablo has what it needs. You can close this tab.",
        )
        .await;
        return Ok(address.to_string());
    }
}

/// The request target (`/callback?code=…`) of one HTTP request, read from its first line.
async fn request_target(sock: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > 16 * 1024 {
            return None;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut first = head.lines().next()?.split(' ');
    let method = first.next()?;
    let target = first.next()?;
    (method == "GET" && target.starts_with('/')).then(|| target.to_string())
}

async fn respond(sock: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>pablo</title><p>{}</p>\n",
        text.replace('<', "&lt;")
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\n\
         content-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(body.as_bytes()).await;
    let _ = sock.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_file_is_private_and_belongs_to_one_url() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-auth").join("tracker.json");
        let store = TokenStore::new(&path, "https://mcp.example/mcp");
        assert!(store.read().unwrap().is_none());
        store
            .write(StoredCredentials::new(
                "client-1".into(),
                None,
                vec![],
                None,
            ))
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700, "{dir_mode:o}");
        assert_eq!(store.read().unwrap().unwrap().client_id, "client-1");
        // The same name pointed at another server does not get them.
        let other = TokenStore::new(&path, "https://elsewhere.example/mcp");
        assert!(other.read().unwrap().is_none());
        assert!(TokenStore::forget(&path).unwrap());
        assert!(!TokenStore::forget(&path).unwrap());
    }
}
