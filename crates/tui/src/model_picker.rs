//! The `/model` picker. A person switching models rarely remembers the exact name the provider
//! takes, or what a model costs; the picker lists the model in use, the models of recent
//! sessions (any provider, newest first) and the names pablo knows for the current provider, each
//! with its window and price, and switches from the next turn on Enter (as `/model NAME` does).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};

use super::text::str_width;
use super::theme;
use pablo_launch::{model_facts, suggested_models};

/// How many models of recent sessions the picker offers.
const RECENT: usize = 6;

/// Why a model is in the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    Current,
    /// Used by a recent session; the text says when (`3 h ago`).
    Recent(String),
    Known,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelChoice {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) origin: Origin,
}

/// What a key in the picker asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pick {
    None,
    Close,
    /// Switch to `model` from the next turn (`provider` when it is another one).
    Switch {
        provider: Option<String>,
        model: String,
    },
}

#[derive(Debug, Default)]
pub(crate) struct ModelView {
    pub(crate) rows: Vec<ModelChoice>,
    pub(crate) selected: usize,
    /// The provider in use: other providers' rows are named `PROVIDER/NAME`.
    pub(crate) provider: String,
}

impl ModelView {
    /// The picker for a session on `model` from `provider`, offering the models of `recent`
    /// sessions as well (as of `now_ms`, for "3 h ago").
    pub(crate) fn new(
        provider: &str,
        model: &str,
        recent: &[pablo_launch::SessionInfo],
        now_ms: u64,
    ) -> Self {
        let mut rows = vec![ModelChoice {
            provider: provider.to_string(),
            model: model.to_string(),
            origin: Origin::Current,
        }];
        let listed = |rows: &[ModelChoice], p: &str, m: &str| {
            rows.iter().any(|r| r.provider == p && r.model == m)
        };
        let mut sessions: Vec<&pablo_launch::SessionInfo> = recent.iter().collect();
        sessions.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        let mut added = 0;
        for s in sessions {
            if added == RECENT {
                break;
            }
            if s.model.is_empty() || listed(&rows, &s.provider, &s.model) {
                continue;
            }
            rows.push(ModelChoice {
                provider: s.provider.clone(),
                model: s.model.clone(),
                origin: Origin::Recent(super::info::ago(now_ms, s.updated_ms)),
            });
            added += 1;
        }
        for name in suggested_models(provider) {
            if !listed(&rows, provider, name) {
                rows.push(ModelChoice {
                    provider: provider.to_string(),
                    model: (*name).to_string(),
                    origin: Origin::Known,
                });
            }
        }
        Self {
            rows,
            selected: 0,
            provider: provider.to_string(),
        }
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Pick {
        if super::restore::move_selection(key.code, &mut self.selected, self.rows.len()) {
            return Pick::None;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Pick::Close,
            KeyCode::Enter => match self.rows.get(self.selected) {
                Some(r) if r.origin == Origin::Current => Pick::Close,
                Some(r) => Pick::Switch {
                    provider: (r.provider != self.provider).then(|| r.provider.clone()),
                    model: r.model.clone(),
                },
                None => Pick::Close,
            },
            _ => Pick::None,
        }
    }

    /// The rows as drawn at `width`: name, context window, price per million tokens, and why it
    /// is listed.
    pub(crate) fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let names: Vec<String> = self.rows.iter().map(|r| self.name_of(r)).collect();
        let name_w = names
            .iter()
            .map(|n| str_width(n))
            .max()
            .unwrap_or(0)
            .min(40);
        self.rows
            .iter()
            .zip(names)
            .enumerate()
            .map(|(i, (r, name))| {
                let selected = i == self.selected;
                let facts = model_facts(&r.model);
                let window = match facts.window {
                    None => "?".to_string(),
                    Some(w) if w >= 1_000_000 => format!("{}M", trim(w as f64 / 1_000_000.0)),
                    Some(w) => format!("{}k", w / 1000),
                };
                let price = facts.prices.map_or_else(String::new, |(input, output)| {
                    format!("${} in / ${} out", trim(input), trim(output))
                });
                let why = match &r.origin {
                    Origin::Current => "in use".to_string(),
                    Origin::Recent(when) => format!("used {when}"),
                    Origin::Known => String::new(),
                };
                let (marker, style) = theme::row_marker(selected);
                let name = super::text::truncate(&name, name_w);
                let pad = " ".repeat(name_w.saturating_sub(str_width(&name)));
                let mut line = Line::from(vec![
                    marker,
                    Span::styled(name, style),
                    Span::raw(pad),
                    Span::styled(format!("  {window:>6}  {price:<22}  "), theme::dim()),
                    Span::styled(why, theme::dim()),
                ]);
                if str_width(&line.to_string()) > width {
                    line.spans.truncate(3);
                }
                line
            })
            .collect()
    }

    fn name_of(&self, r: &ModelChoice) -> String {
        if r.provider == self.provider {
            r.model.clone()
        } else {
            format!("{}/{}", r.provider, r.model)
        }
    }
}

/// A price without trailing zeros: `1.25`, `10`, `0.05`.
fn trim(price: f64) -> String {
    let s = format!("{price:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
