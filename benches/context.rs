//! The request stream of a long session: how much of its input a provider can serve from its
//! prompt cache, and what building each request costs pablo.
//!
//! **The recording.** A 200-call session is recorded by running the real agent loop in process
//! (context window, clearing, compaction, the real `fs.read` / `fs.list` / `fs.search` over this
//! repository's own `src/` tree) against a model that plays a fixed script and records every
//! request it is given: 10 user turns of 20 model calls, each step one to three tool calls, and
//! once per turn a step of 25 reads at once (more blocks than Anthropic's cache looks back over).
//! The model reports usage as request bytes / 3.5, so the agent's window estimate is corrected
//! as with a real provider. The window is Claude Sonnet's, 200,000 tokens.
//!
//! **The cache share.** Each recorded request is turned into its Anthropic Messages body and its
//! OpenAI Responses body, and the provider's cache is simulated by the rules the providers
//! document. Anthropic: an entry is written at every breakpoint; a request reads the longest
//! entry found at or up to 20 blocks before one of its breakpoints. OpenAI: the longest prefix
//! shared with an earlier request, in 128-token steps from 1,024 tokens. Tokens are bytes / 4 per
//! piece. Printed with three references: the bound (every token already in the previous request
//! is served), a naive scheme with a breakpoint only at the end of the conversation, and one with
//! only the system breakpoint.
//!
//! **The time.** What pablo does per call to build a request (measure it for the window, clone
//! the conversation, build the provider body, serialize it), over all 200 recorded calls and for
//! the largest one alone, against the floor any client pays: serializing the finished bodies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::{HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::Mutex;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "support/agent.rs"]
mod agent;
#[path = "support/context_session.rs"]
mod context_session;

use agent::{AgentCall, AgentReply, AgentRequest};
use context_session::ContextSession;
use serde_json::{Value, json};

const CALLS: usize = 200;
const TURNS: usize = 10;
const MODEL: &str = "claude-sonnet-4-5";

/// Plays the script: the next step's calls, or text when the queue gives none or the request
/// offers no tool (a summary); usage as request bytes / 3.5.
fn play(steps: &Mutex<VecDeque<Vec<AgentCall>>>, request: &AgentRequest<'_>) -> AgentReply {
    let bytes = request.bytes();
    let calls = if !request.offers_tools() {
        Vec::new()
    } else {
        steps.lock().unwrap().pop_front().unwrap_or_default()
    };
    let text = if calls.is_empty() {
        "Here is what I found: the module keeps its state in one struct."
    } else {
        "Reading on."
    };
    AgentReply::new(text, calls).tokens((bytes as f64 / 3.5) as u64, 40)
}

/// Every `.rs` file under `src/`, sorted.
fn sources(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The script: per turn, 19 tool steps and a closing answer (20 calls); step 7 of each turn
/// reads 25 files at once.
fn script(files: &[String]) -> VecDeque<Vec<AgentCall>> {
    let mut steps = VecDeque::new();
    let mut n = 0usize;
    let mut call = |name: &str, args: Value| {
        n += 1;
        AgentCall::new(&format!("call_{n}"), name, args)
    };
    let mut f = 0usize;
    let mut next_file = || {
        f = (f * 7 + 3) % files.len();
        files[f].clone()
    };
    for turn in 0..TURNS {
        for step in 0..(CALLS / TURNS - 1) {
            let calls = match step {
                7 => (0..25)
                    .map(|_| call("fs_read", json!({"path": next_file(), "limit": 3000})))
                    .collect(),
                s if s % 5 == 0 => vec![call("fs_list", json!({"path": "src", "depth": 2}))],
                s if s % 3 == 0 => vec![
                    call(
                        "fs_search",
                        json!({"query": "fn ", "path": "src", "max_results": 40}),
                    ),
                    call("fs_read", json!({"path": next_file()})),
                ],
                _ => vec![call("fs_read", json!({"path": next_file()}))],
            };
            steps.push_back(calls);
        }
        // Marks the end of the turn: the recorder answers with text when the queue gives none.
        let _ = turn;
        steps.push_back(Vec::new());
    }
    steps
}

/// Records the session.
fn record() -> ContextSession {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sources(root);
    let steps = Mutex::new(script(&files));
    let state = tempfile::tempdir().unwrap();
    let turns: Vec<String> = (0..TURNS)
        .map(|t| format!("Turn {t}: read through the code and tell me how it fits together."))
        .collect();
    ContextSession::record(MODEL, root, state.path(), &turns, move |request| {
        play(&steps, request)
    })
}

/// One piece of a prompt: its running prefix hash, its tokens, and whether it is a breakpoint.
struct Piece {
    prefix: u64,
    tokens: u64,
    breakpoint: bool,
}

fn tokens(v: &Value) -> u64 {
    (v.to_string().len() as u64).div_ceil(4)
}

/// The pieces of a body in cache order, each with the hash of everything up to it (the markers
/// themselves do not count).
fn pieces(parts: Vec<(Value, bool)>) -> Vec<Piece> {
    let mut h = DefaultHasher::new();
    parts
        .into_iter()
        .map(|(mut v, marked)| {
            strip(&mut v);
            v.to_string().hash(&mut h);
            Piece {
                prefix: h.finish(),
                tokens: tokens(&v),
                breakpoint: marked,
            }
        })
        .collect()
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("cache_control");
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// Which breakpoints a scheme keeps.
#[derive(Clone, Copy, PartialEq)]
enum Scheme {
    /// pablo: system, previous end, end.
    Pablo,
    /// system and end of conversation only.
    EndOnly,
    /// system only.
    SystemOnly,
}

fn anthropic_pieces(body: &Value, scheme: Scheme) -> Vec<Piece> {
    let mut parts = Vec::new();
    let tools = body["tools"].clone();
    let tools_marked = tools.to_string().contains("cache_control");
    parts.push((tools, tools_marked));
    for b in body["system"].as_array().into_iter().flatten() {
        parts.push((b.clone(), b.get("cache_control").is_some()));
    }
    let messages = body["messages"].as_array().unwrap();
    let total: usize = messages
        .iter()
        .map(|m| m["content"].as_array().map_or(0, Vec::len))
        .sum();
    let mut seen = 0;
    for m in messages {
        for b in m["content"].as_array().into_iter().flatten() {
            seen += 1;
            let marked = match scheme {
                Scheme::Pablo => b.get("cache_control").is_some(),
                Scheme::EndOnly => seen == total,
                Scheme::SystemOnly => false,
            };
            parts.push((json!({"role": m["role"], "block": b}), marked));
        }
    }
    pieces(parts)
}

/// Anthropic's documented caching: writes at breakpoints, reads found at or within 20 blocks
/// before a breakpoint. Returns (served from cache, written, total) input tokens.
fn anthropic_share(bodies: &[Value], scheme: Scheme) -> (u64, u64, u64) {
    let mut cache: HashSet<u64> = HashSet::new();
    let (mut read, mut written, mut total) = (0, 0, 0);
    for body in bodies {
        let p = anthropic_pieces(body, scheme);
        let sum = |n: usize| p[..n].iter().map(|x| x.tokens).sum::<u64>();
        let mut hit = 0;
        let mut last_bp = 0;
        for (i, piece) in p.iter().enumerate() {
            if !piece.breakpoint {
                continue;
            }
            last_bp = i + 1;
            for j in (i.saturating_sub(20)..=i).rev() {
                if cache.contains(&p[j].prefix) {
                    hit = hit.max(j + 1);
                    break;
                }
            }
        }
        for piece in p.iter().filter(|x| x.breakpoint) {
            cache.insert(piece.prefix);
        }
        read += sum(hit);
        written += sum(last_bp).saturating_sub(sum(hit));
        total += sum(p.len());
    }
    (read, written, total)
}

/// OpenAI's automatic caching: the longest prefix shared with an earlier request, counted in
/// 128-token steps from 1,024 tokens. Returns (served from cache, total).
fn openai_share(bodies: &[Value]) -> (u64, u64) {
    let mut seen: HashSet<u64> = HashSet::new();
    let (mut read, mut total) = (0, 0);
    for body in bodies {
        let mut parts = vec![
            (body["tools"].clone(), false),
            (body["instructions"].clone(), false),
        ];
        parts.extend(
            body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i.clone(), false)),
        );
        let p = pieces(parts);
        let mut shared = 0u64;
        let mut acc = 0u64;
        for piece in &p {
            acc += piece.tokens;
            if seen.contains(&piece.prefix) {
                shared = acc;
            }
        }
        let cached = if shared >= 1024 {
            shared / 128 * 128
        } else {
            0
        };
        seen.extend(p.iter().map(|x| x.prefix));
        read += cached;
        total += acc;
    }
    (read, total)
}

/// Tokens each request shares with the one before (the most any cache could serve).
fn bound(bodies: &[Value]) -> (u64, u64) {
    let mut prev: HashSet<u64> = HashSet::new();
    let (mut shared_all, mut total) = (0, 0);
    for body in bodies {
        let p = anthropic_pieces(body, Scheme::Pablo);
        let mut acc = 0;
        let mut shared = 0;
        for piece in &p {
            acc += piece.tokens;
            if prev.contains(&piece.prefix) {
                shared = acc;
            }
        }
        prev = p.iter().map(|x| x.prefix).collect();
        shared_all += shared;
        total += acc;
    }
    (shared_all, total)
}

fn pct(a: u64, b: u64) -> f64 {
    a as f64 * 100.0 / b.max(1) as f64
}

fn bench(c: &mut Criterion) {
    let session = record();
    let counts = session.counts();
    let anth = session.anthropic_bodies(true);
    let oai = session.responses_bodies(true);
    let (r, w, t) = anthropic_share(&anth, Scheme::Pablo);
    let (re, _, te) = anthropic_share(&anth, Scheme::EndOnly);
    let (rs, _, ts) = anthropic_share(&anth, Scheme::SystemOnly);
    let (ro, to) = openai_share(&oai);
    let (b, tb) = bound(&anth);
    println!(
        "recorded: {} requests ({} model calls of the session, {} summaries), largest {} bytes, profile window {} tokens",
        counts.requests,
        counts.tool_requests,
        counts.requests - counts.tool_requests,
        counts.largest_bytes,
        counts.window
    );
    println!(
        "anthropic, pablo's breakpoints: {:.1}% of {} input tokens read from cache, {:.1}% written",
        pct(r, t),
        t,
        pct(w, t)
    );
    println!(
        "anthropic, end-of-conversation breakpoint only: {:.1}%",
        pct(re, te)
    );
    println!("anthropic, system breakpoint only: {:.1}%", pct(rs, ts));
    println!(
        "openai, automatic prefix cache: {:.1}% of {}",
        pct(ro, to),
        to
    );
    println!(
        "bound (tokens already in the previous request): {:.1}%",
        pct(b, tb)
    );

    let mut g = c.benchmark_group("request_building");
    g.sample_size(20);
    g.bench_function("anthropic_all_200_calls", |bench| {
        bench.iter(|| session.build_anthropic_all())
    });
    g.bench_function("responses_all_200_calls", |bench| {
        bench.iter(|| session.build_responses_all())
    });
    g.bench_function("anthropic_largest_call", |bench| {
        bench.iter(|| session.build_anthropic_largest())
    });
    // The peer: serializing the finished bodies alone, which any client sending them pays.
    let finished = session.anthropic_bodies(false);
    g.bench_function("serialize_only_all_200_calls", |bench| {
        bench.iter(|| {
            finished
                .iter()
                .map(|b| serde_json::to_vec(b).unwrap().len())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
