//! What the model may ask a language server about the code (`lsp.query`): where a name is
//! defined and used, what it is (hover), and the symbols of a file or the workspace. Positions
//! in and out are 1-based lines and UTF-16 columns as the servers count them; the tool turns
//! them into workspace paths and bounds the answer.

use std::path::PathBuf;
use std::time::Duration;

use lsp_types::request::{
    DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};

use super::LspHub;
use super::client::file_uri;
use super::servers::language_id;

/// How long one query may take (a cold server indexes the workspace first).
const QUERY_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest hover text kept.
const MAX_HOVER_CHARS: usize = 4000;

/// A place a server pointed at: an absolute path, 1-based line, 1-based UTF-16 column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationHit {
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
}

/// One symbol a server listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolHit {
    pub name: String,
    /// `function`, `class`, `variable`…
    pub kind: String,
    /// The enclosing symbol, when the server says.
    pub container: Option<String>,
    pub at: LocationHit,
}

/// Definition or references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocateKind {
    Definition,
    References,
}

fn position(line: u32, column_utf16: u32) -> lsp_types::Position {
    lsp_types::Position {
        line: line.saturating_sub(1),
        character: column_utf16.saturating_sub(1),
    }
}

fn hit(uri: &lsp_types::Uri, range: &lsp_types::Range) -> Option<LocationHit> {
    let path = url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()?;
    Some(LocationHit {
        path,
        line: range.start.line.saturating_add(1),
        column: range.start.character.saturating_add(1),
    })
}

fn symbol_kind(k: lsp_types::SymbolKind) -> String {
    let s = format!("{k:?}");
    s.trim_matches('"').to_ascii_lowercase()
}

impl LspHub {
    /// Shows each server covering `rel` its current `text` and asks them in order until one
    /// answers with something; the last error when none could.
    async fn first_answer<T, F, Fut>(&self, rel: &str, text: &str, ask: F) -> Result<Vec<T>, String>
    where
        F: Fn(std::sync::Arc<super::LspClient>, String) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>, String>>,
    {
        let uri = file_uri(&self.workspace.join(rel)).ok_or("not a file path")?;
        let lang = language_id(rel);
        let ids: Vec<usize> = self.covering(rel).map(|(i, _)| i).collect();
        if ids.is_empty() {
            return Err(format!("no language server covers {rel}"));
        }
        let mut last_err = None;
        for i in ids {
            let client = match self.client(i, rel).await {
                Ok(c) => c,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            client.show(&uri, &lang, text).await?;
            match ask(client, uri.clone()).await {
                Ok(found) if !found.is_empty() => return Ok(found),
                Ok(_) => {}
                Err(e) => last_err = Some(e),
            }
        }
        match last_err {
            Some(e) => Err(e),
            None => Ok(Vec::new()),
        }
    }

    /// Where the name at `line`:`column` of `rel` (whose content is `text`) is defined, or used.
    pub async fn locate(
        &self,
        kind: LocateKind,
        rel: &str,
        text: &str,
        line: u32,
        column: u32,
    ) -> Result<Vec<LocationHit>, String> {
        self.first_answer(rel, text, |client, uri| async move {
            let doc = lsp_types::TextDocumentPositionParams {
                text_document: lsp_types::TextDocumentIdentifier {
                    uri: uri.parse().map_err(|_| "bad uri".to_string())?,
                },
                position: position(line, column),
            };
            let none = lsp_types::PartialResultParams::default();
            let work = lsp_types::WorkDoneProgressParams::default();
            match kind {
                LocateKind::Definition => {
                    let params = lsp_types::GotoDefinitionParams {
                        text_document_position_params: doc,
                        work_done_progress_params: work,
                        partial_result_params: none,
                    };
                    let r = client
                        .request::<GotoDefinition>(params, QUERY_TIMEOUT)
                        .await?;
                    Ok(match r {
                        None => Vec::new(),
                        Some(lsp_types::GotoDefinitionResponse::Scalar(l)) => {
                            hit(&l.uri, &l.range).into_iter().collect()
                        }
                        Some(lsp_types::GotoDefinitionResponse::Array(ls)) => {
                            ls.iter().filter_map(|l| hit(&l.uri, &l.range)).collect()
                        }
                        Some(lsp_types::GotoDefinitionResponse::Link(ls)) => ls
                            .iter()
                            .filter_map(|l| hit(&l.target_uri, &l.target_selection_range))
                            .collect(),
                    })
                }
                LocateKind::References => {
                    let params = lsp_types::ReferenceParams {
                        text_document_position: doc,
                        work_done_progress_params: work,
                        partial_result_params: none,
                        context: lsp_types::ReferenceContext {
                            include_declaration: true,
                        },
                    };
                    let r = client.request::<References>(params, QUERY_TIMEOUT).await?;
                    Ok(r.unwrap_or_default()
                        .iter()
                        .filter_map(|l| hit(&l.uri, &l.range))
                        .collect())
                }
            }
        })
        .await
    }

    /// What the server says of the name at `line`:`column` (its type, its documentation).
    pub async fn hover(
        &self,
        rel: &str,
        text: &str,
        line: u32,
        column: u32,
    ) -> Result<Option<String>, String> {
        let found = self
            .first_answer(rel, text, |client, uri| async move {
                let params = lsp_types::HoverParams {
                    text_document_position_params: lsp_types::TextDocumentPositionParams {
                        text_document: lsp_types::TextDocumentIdentifier {
                            uri: uri.parse().map_err(|_| "bad uri".to_string())?,
                        },
                        position: position(line, column),
                    },
                    work_done_progress_params: Default::default(),
                };
                let r = client
                    .request::<HoverRequest>(params, QUERY_TIMEOUT)
                    .await?;
                Ok(r.map(|h| hover_text(h.contents))
                    .into_iter()
                    .collect::<Vec<_>>())
            })
            .await?;
        Ok(found.into_iter().next().map(|t: String| {
            let mut t: String = t.chars().take(MAX_HOVER_CHARS).collect();
            if t.len() >= MAX_HOVER_CHARS {
                t.push('…');
            }
            t
        }))
    }

    /// The symbols of `rel` (nested ones flattened, with their container).
    pub async fn document_symbols(&self, rel: &str, text: &str) -> Result<Vec<SymbolHit>, String> {
        let path = self.workspace.join(rel);
        self.first_answer(rel, text, |client, uri| {
            let path = path.clone();
            async move {
                let params = lsp_types::DocumentSymbolParams {
                    text_document: lsp_types::TextDocumentIdentifier {
                        uri: uri.parse().map_err(|_| "bad uri".to_string())?,
                    },
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                };
                let r = client
                    .request::<DocumentSymbolRequest>(params, QUERY_TIMEOUT)
                    .await?;
                let mut out = Vec::new();
                match r {
                    None => {}
                    Some(lsp_types::DocumentSymbolResponse::Flat(list)) => {
                        for s in list {
                            if let Some(at) = hit(&s.location.uri, &s.location.range) {
                                out.push(SymbolHit {
                                    name: s.name,
                                    kind: symbol_kind(s.kind),
                                    container: s.container_name,
                                    at,
                                });
                            }
                        }
                    }
                    Some(lsp_types::DocumentSymbolResponse::Nested(list)) => {
                        flatten(&path, &list, None, &mut out);
                    }
                }
                Ok(out)
            }
        })
        .await
    }

    /// Symbols of the whole workspace whose name matches `query`, from every server (started
    /// at the workspace root when none runs yet).
    pub async fn workspace_symbols(&self, query: &str) -> Result<Vec<SymbolHit>, String> {
        let mut out = Vec::new();
        let mut last_err = None;
        for i in 0..self.defs.len() {
            let client = match self.client(i, "").await {
                Ok(c) => c,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let params = lsp_types::WorkspaceSymbolParams {
                query: query.to_string(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            match client
                .request::<WorkspaceSymbolRequest>(params, QUERY_TIMEOUT)
                .await
            {
                Ok(Some(lsp_types::WorkspaceSymbolResponse::Flat(list))) => {
                    for s in list {
                        if let Some(at) = hit(&s.location.uri, &s.location.range) {
                            out.push(SymbolHit {
                                name: s.name,
                                kind: symbol_kind(s.kind),
                                container: s.container_name,
                                at,
                            });
                        }
                    }
                }
                Ok(Some(lsp_types::WorkspaceSymbolResponse::Nested(list))) => {
                    for s in list {
                        let at = match &s.location {
                            lsp_types::OneOf::Left(l) => hit(&l.uri, &l.range),
                            lsp_types::OneOf::Right(w) => hit(&w.uri, &lsp_types::Range::default()),
                        };
                        if let Some(at) = at {
                            out.push(SymbolHit {
                                name: s.name,
                                kind: symbol_kind(s.kind),
                                container: s.container_name,
                                at,
                            });
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => last_err = Some(e),
            }
        }
        match (out.is_empty(), last_err) {
            (true, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }
}

fn flatten(
    path: &std::path::Path,
    list: &[lsp_types::DocumentSymbol],
    container: Option<&str>,
    out: &mut Vec<SymbolHit>,
) {
    for s in list {
        out.push(SymbolHit {
            name: s.name.clone(),
            kind: symbol_kind(s.kind),
            container: container.map(str::to_string),
            at: LocationHit {
                path: path.to_path_buf(),
                line: s.selection_range.start.line.saturating_add(1),
                column: s.selection_range.start.character.saturating_add(1),
            },
        });
        if let Some(children) = &s.children {
            flatten(path, children, Some(&s.name), out);
        }
    }
}

fn hover_text(contents: lsp_types::HoverContents) -> String {
    let marked = |m: lsp_types::MarkedString| match m {
        lsp_types::MarkedString::String(s) => s,
        lsp_types::MarkedString::LanguageString(l) => l.value,
    };
    match contents {
        lsp_types::HoverContents::Scalar(m) => marked(m),
        lsp_types::HoverContents::Array(list) => list
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        lsp_types::HoverContents::Markup(m) => m.value,
    }
}
