//! HTML reduced to the text a person would read, for `web.fetch`.
//!
//! The model needs the words of a page, not its markup: scripts, styles and embedded content are
//! dropped, headings become `#` lines and list items `-` (or numbered) lines, table cells are
//! separated by `|`, and when the page marks its main content (`<main>`, `<article>`,
//! `role="main"`) only that is kept, which leaves navigation and footers out. Parsing is
//! html5ever's (through `scraper`), the same algorithm browsers use, so broken markup is read the
//! way a browser would read it. The walk over the tree is iterative: a page nested a hundred
//! thousand levels deep costs memory, never the stack. The tree builder's time does grow with the
//! square of the nesting depth, so a hostile page could keep it busy for minutes: the page is fed
//! to the parser in chunks against a time budget, and what was parsed when the budget runs out is
//! what is read (the result says it was cut).

use std::time::{Duration, Instant};

use ego_tree::iter::Edge;
use html5ever::tendril::{StrTendril, TendrilSink};
use scraper::{ElementRef, Html, HtmlTreeSink, Node, Selector};

/// How long parsing one page may take.
pub(crate) const PARSE_BUDGET: Duration = Duration::from_secs(5);
/// Bytes fed to the parser between two looks at the clock.
const CHUNK: usize = 16 * 1024;

/// A page as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageText {
    pub(crate) title: Option<String>,
    pub(crate) text: String,
    /// Whether a main-content element was found (and only it was kept).
    pub(crate) main_content: bool,
    /// Parsing ran out of its budget: the text covers only the start of the page.
    pub(crate) cut: bool,
}

/// Elements whose content is never text for a reader.
fn dropped(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "head"
            | "title"
            | "meta"
            | "link"
            | "base"
            | "iframe"
            | "frame"
            | "frameset"
            | "object"
            | "embed"
            | "applet"
            | "param"
            | "svg"
            | "math"
            | "canvas"
            | "video"
            | "audio"
            | "picture"
            | "source"
            | "track"
            | "img"
            | "map"
            | "input"
            | "select"
            | "textarea"
            | "button"
            | "dialog"
    )
}

/// Elements that start and end on a line of their own.
fn block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "dd"
            | "details"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "header"
            | "hgroup"
            | "html"
            | "legend"
            | "main"
            | "nav"
            | "ol"
            | "p"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "tfoot"
            | "thead"
            | "tr"
            | "ul"
            | "caption"
    )
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// Reduces an HTML document to readable text within [`PARSE_BUDGET`].
pub(crate) fn reduce(html: &str) -> PageText {
    reduce_within(html, PARSE_BUDGET)
}

/// Parses `html` in chunks until it is all read or `budget` is spent.
fn parse(html: &str, budget: Duration) -> (Html, bool) {
    let deadline = Instant::now() + budget;
    let mut parser = html5ever::driver::parse_document(
        HtmlTreeSink::new(Html::new_document()),
        Default::default(),
    );
    let mut rest = html;
    let mut cut = false;
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
        if !rest.is_empty() && Instant::now() >= deadline {
            cut = true;
            break;
        }
    }
    (parser.finish(), cut)
}

/// [`reduce`] with another time budget.
pub(crate) fn reduce_within(html: &str, budget: Duration) -> PageText {
    let (doc, cut) = parse(html, budget);
    let title = Selector::parse("title")
        .ok()
        .and_then(|s| doc.select(&s).next())
        .map(|t| collapse(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty());
    let main = ["main", "article", "[role=main]"]
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .find_map(|s| doc.select(&s).next());
    let root = match main {
        Some(m) => m,
        None => Selector::parse("body")
            .ok()
            .and_then(|s| doc.select(&s).next())
            .unwrap_or_else(|| doc.root_element()),
    };
    PageText {
        title,
        text: walk(root),
        main_content: main.is_some(),
        cut,
    }
}

/// Whitespace runs to single spaces, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text being built: whitespace collapsed as a browser would, explicit line structure.
struct Writer {
    out: String,
    /// A space is owed before the next word (collapsed whitespace between inline runs).
    space: bool,
    /// Inside `<pre>`: text is copied as it is.
    pre: usize,
}

impl Writer {
    fn word_text(&mut self, text: &str) {
        if self.pre > 0 {
            self.out.push_str(text);
            return;
        }
        let starts_with_space = text.starts_with(char::is_whitespace);
        let ends_with_space = text.ends_with(char::is_whitespace);
        let mut words = text.split_whitespace().peekable();
        if words.peek().is_none() {
            if !text.is_empty() {
                self.space = true;
            }
            return;
        }
        if (self.space || starts_with_space) && !self.at_line_start() {
            self.out.push(' ');
        }
        let mut first = true;
        for w in words {
            if !first {
                self.out.push(' ');
            }
            self.out.push_str(w);
            first = false;
        }
        self.space = ends_with_space;
    }

    /// Raw text that is not subject to whitespace collapsing (markers).
    fn mark(&mut self, text: &str) {
        self.out.push_str(text);
        self.space = false;
    }

    fn at_line_start(&self) -> bool {
        self.out.is_empty() || self.out.ends_with('\n')
    }

    fn line_break(&mut self) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if !self.at_line_start() {
            self.out.push('\n');
        }
        self.space = false;
    }

    fn blank_line(&mut self) {
        self.line_break();
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }
}

fn walk(root: ElementRef<'_>) -> String {
    let mut w = Writer {
        out: String::new(),
        space: false,
        pre: 0,
    };
    // Per open list: `None` for `<ul>`, the next number for `<ol>`.
    let mut lists: Vec<Option<u64>> = Vec::new();
    // Per open table row: whether a cell was written yet.
    let mut rows: Vec<bool> = Vec::new();
    let mut skipping: Option<ego_tree::NodeId> = None;
    for edge in root.traverse() {
        match edge {
            Edge::Open(node) => {
                if skipping.is_some() {
                    continue;
                }
                match node.value() {
                    Node::Text(t) => w.word_text(t),
                    Node::Element(e) => {
                        let name = e.name();
                        let hidden = e.attr("hidden").is_some()
                            || e.attr("aria-hidden").is_some_and(|v| v == "true");
                        if dropped(name) || hidden {
                            skipping = Some(node.id());
                            continue;
                        }
                        if let Some(level) = heading_level(name) {
                            w.blank_line();
                            w.mark(&format!("{} ", "#".repeat(level)));
                        } else if name == "li" {
                            w.line_break();
                            let depth = lists.len().saturating_sub(1);
                            w.mark(&"  ".repeat(depth));
                            match lists.last_mut() {
                                Some(Some(n)) => {
                                    let marker = format!("{n}. ");
                                    *n += 1;
                                    w.mark(&marker);
                                }
                                _ => w.mark("- "),
                            }
                        } else if name == "ul" || name == "ol" {
                            if lists.is_empty() {
                                w.blank_line();
                            } else {
                                w.line_break();
                            }
                            let start = e.attr("start").and_then(|s| s.trim().parse().ok());
                            lists.push((name == "ol").then(|| start.unwrap_or(1)));
                        } else if name == "pre" {
                            w.blank_line();
                            w.pre += 1;
                        } else if name == "br" {
                            w.line_break();
                        } else if name == "hr" {
                            w.blank_line();
                            w.mark("---");
                            w.blank_line();
                        } else if name == "tr" {
                            w.line_break();
                            rows.push(false);
                        } else if name == "td" || name == "th" {
                            if let Some(started) = rows.last_mut() {
                                if *started {
                                    w.mark(" | ");
                                }
                                *started = true;
                            }
                        } else if name == "p" || name == "blockquote" || name == "table" {
                            w.blank_line();
                        } else if block(name) {
                            w.line_break();
                        }
                    }
                    _ => {}
                }
            }
            Edge::Close(node) => {
                if let Some(id) = skipping {
                    if id == node.id() {
                        skipping = None;
                    }
                    continue;
                }
                let Node::Element(e) = node.value() else {
                    continue;
                };
                let name = e.name();
                if heading_level(name).is_some() || name == "p" || name == "table" {
                    w.blank_line();
                } else if name == "pre" {
                    w.pre = w.pre.saturating_sub(1);
                    w.blank_line();
                } else if name == "ul" || name == "ol" {
                    lists.pop();
                    if lists.is_empty() {
                        w.blank_line();
                    } else {
                        w.line_break();
                    }
                } else if name == "tr" {
                    rows.pop();
                    w.line_break();
                } else if name == "li" || block(name) {
                    w.line_break();
                }
            }
        }
    }
    tidy(&w.out)
}

/// Trailing spaces off every line, at most one blank line in a row, no blank start or end.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank > 0 {
                out.push('\n');
            }
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_styles_and_embeds_are_dropped() {
        let p = reduce(
            "<html><head><title> The  Title </title><style>body{color:red}</style>\
             <script>alert('x')</script></head><body><p>Hello <b>world</b>.</p>\
             <script>var secret = 1;</script><iframe src=x>frame text</iframe>\
             <svg><text>svg text</text></svg><noscript>enable js</noscript>\
             <img alt='a picture' src=y><p hidden>hidden text</p></body></html>",
        );
        assert_eq!(p.title.as_deref(), Some("The Title"));
        assert_eq!(p.text, "Hello world.");
        assert!(!p.main_content);
    }

    #[test]
    fn headings_and_list_items_are_marked() {
        let p = reduce(
            "<body><h1>Guide</h1><p>Intro</p><h2>Steps</h2><ol><li>one</li><li>two\
             <ul><li>nested</li></ul></li></ol><ul><li>a</li><li>b</li></ul></body>",
        );
        assert_eq!(
            p.text,
            "# Guide\n\nIntro\n\n## Steps\n\n1. one\n2. two\n  - nested\n\n- a\n- b"
        );
    }

    #[test]
    fn main_content_is_preferred_and_navigation_and_footer_are_left_out() {
        let page = "<body><nav><a href=/>Home</a> <a href=/x>Other</a></nav>\
                    <main><h1>Article</h1><p>Body text.</p></main>\
                    <footer>Copyright</footer></body>";
        let p = reduce(page);
        assert!(p.main_content);
        assert_eq!(p.text, "# Article\n\nBody text.");
        let p = reduce("<body><nav>Menu</nav><article><p>Story</p></article><footer>F</footer>");
        assert_eq!(p.text, "Story");
        let p = reduce("<body><div role=main><p>Role main</p></div><div>aside</div>");
        assert_eq!(p.text, "Role main");
    }

    #[test]
    fn without_main_content_the_whole_body_is_kept() {
        let p = reduce("<body><nav>Menu</nav><p>Text</p><footer>Foot</footer></body>");
        assert_eq!(p.text, "Menu\n\nText\n\nFoot");
    }

    #[test]
    fn whitespace_collapses_except_in_pre_and_inline_runs_keep_their_spaces() {
        let p = reduce(
            "<p>a\n   b <i>c</i>d <a href=#>e</a> f</p><pre>  x\n    y</pre><p>line<br>break</p>",
        );
        assert_eq!(p.text, "a b cd e f\n\n  x\n    y\n\nline\nbreak");
    }

    #[test]
    fn table_cells_are_separated() {
        let p = reduce(
            "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>41</td></tr></table>",
        );
        assert_eq!(p.text, "Name | Age\nAnn | 41");
    }

    #[test]
    fn broken_and_deeply_nested_markup_does_not_fail() {
        let p = reduce("<p>unclosed <b>bold <i>both</p>after");
        assert!(p.text.contains("unclosed bold both"), "{}", p.text);
        assert!(!p.cut);
        // Deep enough to overflow a recursive walk; shallow enough to parse quickly.
        let deep = format!("{}deep{}", "<div>".repeat(3_000), "</div>".repeat(3_000));
        let p = reduce(&deep);
        assert_eq!(p.text, "deep");
    }

    #[test]
    fn a_page_that_outlasts_the_parse_budget_is_cut_at_a_chunk() {
        // 400,000 nested elements would keep the tree builder busy for minutes; with no budget
        // left after the first chunk, only that chunk is read.
        let hostile = format!("<p>start</p>{}", "<div>".repeat(400_000));
        let p = reduce_within(&hostile, Duration::ZERO);
        assert!(p.cut);
        assert_eq!(p.text, "start");
    }

    #[test]
    fn entities_are_decoded() {
        let p = reduce("<p>Fish &amp; chips &lt;3 &eacute;t&eacute;</p>");
        assert_eq!(p.text, "Fish & chips <3 été");
    }
}
