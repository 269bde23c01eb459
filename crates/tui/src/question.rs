//! The form of an MCP server's question (`elicitation/create`): a layer under the transcript like
//! the approval prompt, one row per field, answered with values, declined or dismissed.
//!
//! What is typed is checked against the field as it is submitted (`QuestionField::parse`, the
//! same rules the engine checks again); a value that does not fit keeps the form open, says why,
//! and moves to that field. The server's message and field names are its own text: they are
//! shown as text, never as markup or keys.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};
use serde_json::{Map, Value};

use super::text::wrap_line;
use super::theme;
use pablo_protocol::{FieldKind, McpQuestion, QuestionAnswer, QuestionField};

/// What the person has entered in one field.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    /// Text and numbers, as typed.
    Typed(String),
    /// A boolean: not chosen yet, yes or no.
    Toggle(Option<bool>),
    /// A choice: the index of the option, or none yet.
    Pick(Option<usize>),
}

/// An open question.
#[derive(Debug)]
pub(crate) struct QuestionView {
    pub(crate) question: McpQuestion,
    inputs: Vec<Input>,
    pub(crate) focused: usize,
    /// Why the last submit was not sent.
    problem: Option<String>,
}

impl QuestionView {
    pub(crate) fn new(question: McpQuestion) -> Self {
        let inputs = question.fields.iter().map(initial).collect();
        Self {
            question,
            inputs,
            focused: 0,
            problem: None,
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.question.id
    }

    /// The values as the server receives them, or the first field that does not fit (and why).
    fn content(&self) -> Result<Map<String, Value>, (usize, String)> {
        let mut out = Map::new();
        for (i, (field, input)) in self.question.fields.iter().zip(&self.inputs).enumerate() {
            let value = match (input, &field.kind) {
                (Input::Typed(text), _) => field.parse(text).map_err(|e| (i, e))?,
                (Input::Toggle(b), _) => match b {
                    Some(b) => Some(Value::Bool(*b)),
                    None if field.required => {
                        return Err((i, format!("{} is required: yes or no", field.label())));
                    }
                    None => None,
                },
                (Input::Pick(p), FieldKind::Choice { options, .. }) => {
                    match p.and_then(|p| options.get(p)) {
                        Some(o) => Some(Value::String(o.clone())),
                        None if field.required => {
                            return Err((i, format!("{} is required: choose one", field.label())));
                        }
                        None => None,
                    }
                }
                (Input::Pick(_), _) => None,
            };
            if let Some(v) = value {
                out.insert(field.name.clone(), v);
            }
        }
        Ok(out)
    }

    /// A key; `Some` when it answers the question (the layer then closes).
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Option<QuestionAnswer> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let count = self.inputs.len();
        match key.code {
            KeyCode::Esc => return Some(QuestionAnswer::Cancel),
            KeyCode::Char('d') if ctrl => return Some(QuestionAnswer::Decline),
            KeyCode::Enter => {
                return match self.content() {
                    Ok(content) => Some(QuestionAnswer::Accept { content }),
                    Err((field, why)) => {
                        self.focused = field;
                        self.problem = Some(why);
                        None
                    }
                };
            }
            KeyCode::Tab | KeyCode::Down if count > 0 => {
                self.focused = (self.focused + 1) % count;
            }
            KeyCode::BackTab | KeyCode::Up if count > 0 => {
                self.focused = (self.focused + count - 1) % count;
            }
            _ => self.edit(key),
        }
        None
    }

    /// A key that changes the focused field.
    fn edit(&mut self, key: KeyEvent) {
        let Some(field) = self.question.fields.get(self.focused) else {
            return;
        };
        let options = match &field.kind {
            FieldKind::Choice { options, .. } => options.len(),
            _ => 0,
        };
        let required = field.required;
        let Some(input) = self.inputs.get_mut(self.focused) else {
            return;
        };
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match (input, key.code) {
            (Input::Typed(text), KeyCode::Backspace) => {
                text.pop();
            }
            (Input::Typed(text), KeyCode::Char(c)) if plain => text.push(c),
            (Input::Toggle(b), KeyCode::Char(' ')) => {
                *b = match *b {
                    None => Some(true),
                    Some(true) => Some(false),
                    Some(false) if required => Some(true),
                    Some(false) => None,
                }
            }
            (Input::Toggle(b), KeyCode::Char('y')) => *b = Some(true),
            (Input::Toggle(b), KeyCode::Char('n')) => *b = Some(false),
            (Input::Pick(p), KeyCode::Right | KeyCode::Char(' ')) if options > 0 => {
                *p = Some(p.map_or(0, |i| (i + 1) % options));
            }
            (Input::Pick(p), KeyCode::Left) if options > 0 => {
                *p = Some(p.map_or(options - 1, |i| (i + options - 1) % options));
            }
            _ => return,
        }
        self.problem = None;
    }

    /// Text pasted into the focused field (a line break becomes a space).
    pub(crate) fn paste(&mut self, text: &str) {
        if let Some(Input::Typed(t)) = self.inputs.get_mut(self.focused) {
            t.push_str(&text.replace(['\r', '\n'], " "));
            self.problem = None;
        }
    }

    pub(crate) fn title(&self) -> String {
        format!(" The MCP server {} asks ", self.question.server)
    }

    /// The message and one row per field (with its description under it).
    pub(crate) fn body(&self, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for l in self.question.message.lines() {
            wrap_line(&Line::from(Span::raw(l.to_string())), width, 0, &mut out);
        }
        out.push(Line::default());
        let label_w = self
            .question
            .fields
            .iter()
            .map(|f| f.label().chars().count() + usize::from(f.required) * 2)
            .max()
            .unwrap_or(0)
            .min(width / 3)
            .max(4);
        for (i, (field, input)) in self.question.fields.iter().zip(&self.inputs).enumerate() {
            let focused = i == self.focused;
            let mut label: String = field.label().chars().take(label_w).collect();
            if field.required {
                label.push_str(" *");
            }
            let pad = label_w.saturating_sub(label.chars().count());
            let marker = if focused { "› " } else { "  " };
            let mut spans = vec![
                Span::styled(marker, theme::accent()),
                Span::styled(
                    format!("{label}{}  ", " ".repeat(pad)),
                    if focused { theme::bold() } else { theme::dim() },
                ),
            ];
            spans.extend(value_spans(field, input, focused));
            wrap_line(&Line::from(spans), width, label_w + 4, &mut out);
            if let Some(d) = &field.description {
                let l = Line::from(Span::styled(
                    format!("{}{d}", " ".repeat(label_w + 4)),
                    theme::dim(),
                ));
                wrap_line(&l, width, label_w + 4, &mut out);
            }
        }
        out
    }

    /// The keys, and why the last submit was refused.
    pub(crate) fn footer(&self, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let Some(p) = &self.problem {
            wrap_line(
                &Line::from(Span::styled(p.clone(), theme::error())),
                width,
                2,
                &mut out,
            );
        }
        let mut keys = vec![("enter", "send"), ("tab ↑↓", "field")];
        match self.question.fields.get(self.focused).map(|f| &f.kind) {
            Some(FieldKind::Boolean) => keys.push(("space y n", "yes/no")),
            Some(FieldKind::Choice { .. }) => keys.push(("← →", "choose")),
            _ => {}
        }
        keys.push(("ctrl-d", "decline"));
        keys.push(("esc", "dismiss"));
        wrap_line(&theme::keys_line(&keys), width, 0, &mut out);
        out
    }

    /// Rows the form takes at the bottom of `main`: all it needs, up to three quarters of it
    /// (the whole of it inline, where what led to the question is in the scrollback).
    pub(crate) fn height(&self, main: Rect, inline: bool) -> u16 {
        let width = main.width.saturating_sub(4) as usize;
        let want = (self.body(width).len() + self.footer(width).len() + 3) as u16;
        if inline {
            return want.min(main.height);
        }
        want.min((main.height * 3 / 4).max(main.height.min(8)))
    }

    /// Draws the form at the bottom of `main`, the focused field kept in sight.
    pub(crate) fn draw(&self, main: Rect, inline: bool, buf: &mut Buffer) {
        let width = main.width.saturating_sub(4) as usize;
        let body = self.body(width);
        let footer = self.footer(width);
        let h = self.height(main, inline);
        let area = Rect::new(main.x, main.y + main.height - h, main.width, h);
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme::accent())
            .title(Span::styled(
                self.title(),
                theme::accent().add_modifier(ratatui::style::Modifier::BOLD),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let inner = Rect::new(
            inner.x + 1,
            inner.y,
            inner.width.saturating_sub(2),
            inner.height,
        );
        let footer_h = (footer.len() as u16).min(inner.height);
        let body_h = inner.height.saturating_sub(footer_h + 1) as usize;
        // The focused row is the one with the marker; the body scrolls to keep it in sight.
        let focus_row = body
            .iter()
            .position(|l| l.spans.first().is_some_and(|s| s.content == "› "))
            .unwrap_or(0);
        let scroll = (focus_row + 1).saturating_sub(body_h);
        for (i, l) in body.iter().skip(scroll).take(body_h).enumerate() {
            buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
        }
        let fy = inner.y + inner.height - footer_h;
        for (i, l) in footer.iter().take(footer_h as usize).enumerate() {
            buf.set_line(inner.x, fy + i as u16, l, inner.width);
        }
    }
}

/// A field's first input: the server's default, else empty (or not chosen).
fn initial(field: &QuestionField) -> Input {
    let default = field.default.as_ref();
    match &field.kind {
        FieldKind::Text { .. } => Input::Typed(
            default
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        ),
        FieldKind::Number { .. } => {
            Input::Typed(default.map(|d| d.to_string()).unwrap_or_default())
        }
        FieldKind::Boolean => Input::Toggle(default.and_then(Value::as_bool)),
        FieldKind::Choice { options, .. } => Input::Pick(
            default
                .and_then(Value::as_str)
                .and_then(|d| options.iter().position(|o| o == d)),
        ),
    }
}

/// How a field's value looks: text in a box with a cursor when focused, yes/no, or the choice
/// between arrows.
fn value_spans(field: &QuestionField, input: &Input, focused: bool) -> Vec<Span<'static>> {
    let value_style = if focused {
        theme::selected()
    } else {
        theme::inline_code()
    };
    match (input, &field.kind) {
        (Input::Typed(text), kind) => {
            let mut spans = vec![Span::styled(text.clone(), value_style)];
            if focused {
                spans.push(Span::styled("▍", theme::accent()));
            }
            spans.push(Span::styled(" ", value_style));
            if text.is_empty()
                && let Some(hint) = typed_hint(kind)
            {
                spans.push(Span::styled(format!("  {hint}"), theme::dim()));
            }
            spans
        }
        (Input::Toggle(b), _) => {
            let word = match b {
                None => "—",
                Some(true) => "yes",
                Some(false) => "no",
            };
            vec![Span::styled(format!("{word} "), value_style)]
        }
        (Input::Pick(p), FieldKind::Choice { options, labels }) => {
            let shown = p
                .and_then(|i| labels.get(i).or_else(|| options.get(i)))
                .cloned()
                .unwrap_or_else(|| "choose".to_string());
            let mut spans = vec![Span::styled(format!("‹ {shown} ›"), value_style)];
            if let Some(i) = p {
                spans.push(Span::styled(
                    format!("  {} of {}", i + 1, options.len()),
                    theme::dim(),
                ));
            }
            spans
        }
        (Input::Pick(_), _) => Vec::new(),
    }
}

/// What an empty text or number field takes, in a few words.
fn typed_hint(kind: &FieldKind) -> Option<String> {
    match kind {
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let what = if *integer {
                "a whole number"
            } else {
                "a number"
            };
            Some(match (minimum, maximum) {
                (Some(lo), Some(hi)) => format!("{what}, {lo} to {hi}"),
                (Some(lo), None) => format!("{what}, at least {lo}"),
                (None, Some(hi)) => format!("{what}, at most {hi}"),
                (None, None) => what.to_string(),
            })
        }
        FieldKind::Text {
            format: Some(f), ..
        } => Some(match f.as_str() {
            "email" => "an email address".into(),
            "uri" => "a URI".into(),
            "date" => "YYYY-MM-DD".into(),
            "date-time" => "YYYY-MM-DDThh:mm:ssZ".into(),
            other => other.to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn booking() -> McpQuestion {
        let field = |name: &str, required: bool, kind: FieldKind| QuestionField {
            name: name.into(),
            title: None,
            description: None,
            required,
            kind,
            default: None,
        };
        McpQuestion {
            id: "q-1".into(),
            server: "hotel".into(),
            message: "Where do you want to stay?".into(),
            fields: vec![
                field(
                    "city",
                    true,
                    FieldKind::Text {
                        min_length: None,
                        max_length: None,
                        format: None,
                    },
                ),
                field(
                    "nights",
                    false,
                    FieldKind::Number {
                        integer: true,
                        minimum: Some(1.0),
                        maximum: None,
                    },
                ),
                field("breakfast", false, FieldKind::Boolean),
                field(
                    "room",
                    true,
                    FieldKind::Choice {
                        options: vec!["single".into(), "double".into()],
                        labels: vec![],
                    },
                ),
            ],
        }
    }

    fn typed(v: &mut QuestionView, text: &str) {
        for c in text.chars() {
            v.handle_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn filled_fields_are_sent_with_their_types_and_empty_optional_ones_left_out() {
        let mut v = QuestionView::new(booking());
        typed(&mut v, "Lyon");
        v.handle_key(key(KeyCode::Tab));
        typed(&mut v, "3");
        v.handle_key(key(KeyCode::Tab));
        v.handle_key(key(KeyCode::Tab));
        v.handle_key(key(KeyCode::Right));
        v.handle_key(key(KeyCode::Right));
        let answer = v.handle_key(key(KeyCode::Enter)).expect("an answer");
        let mut content = Map::new();
        content.insert("city".into(), json!("Lyon"));
        content.insert("nights".into(), json!(3));
        content.insert("room".into(), json!("double"));
        assert_eq!(answer, QuestionAnswer::Accept { content });
    }

    #[test]
    fn a_value_that_does_not_fit_keeps_the_form_open_on_its_field_saying_why() {
        let mut v = QuestionView::new(booking());
        typed(&mut v, "Lyon");
        v.handle_key(key(KeyCode::Tab));
        typed(&mut v, "zero");
        v.handle_key(key(KeyCode::Up));
        assert_eq!(v.handle_key(key(KeyCode::Enter)), None);
        assert_eq!(v.focused, 1);
        assert_eq!(v.problem.as_deref(), Some("nights is a whole number"));
        let footer: String = v.footer(80)[0]
            .spans
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(footer, "nights is a whole number");
    }

    #[test]
    fn esc_dismisses_and_ctrl_d_declines() {
        let mut v = QuestionView::new(booking());
        assert_eq!(
            v.handle_key(key(KeyCode::Esc)),
            Some(QuestionAnswer::Cancel)
        );
        let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(v.handle_key(ctrl_d), Some(QuestionAnswer::Decline));
    }
}
