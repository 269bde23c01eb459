//! Decoding a recorded ~10 MB OpenAI-format SSE stream made of many small tool-argument
//! fragments, through the same path the client uses (`model::sse::decode` with the OpenAI
//! decoder), fed as 16 KiB network-sized chunks and, separately, as one 10 MB chunk. The peer
//! figure is a plain `serde_json::from_slice` pass over the same `data:` payloads: JSON parsing
//! alone, the floor any SSE decoder sits on.
//!
//! Then the framing alone (`model::sse_frame::SseParser`) beside `eventsource-stream`, the crate
//! pablo used before: on the first MiB of the same stream, and on one unterminated `data:` line
//! of 1, 2 and 4 MiB arriving in 16 KiB chunks (what a hostile or broken server can send), where
//! the crate's cost grows with the square of the line and pablo's with the line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::executor::block_on;
use pablo_model::StreamEvent;
use pablo_model::openai::OpenAiDecoder;
use pablo_model::sse::{ByteError, decode};
use pablo_model::sse_frame::SseParser;
use serde_json::json;

const TARGET_BYTES: usize = 10 * 1024 * 1024;
const NETWORK_CHUNK: usize = 16 * 1024;

/// Decodes `chunks` as an OpenAI Chat Completions stream, through the same path the client uses,
/// and returns the bytes of tool-call arguments it yields (the stream is well formed: a failure
/// panics).
fn sse_decode_openai(chunks: Vec<Bytes>) -> usize {
    let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, ByteError>));
    let events = decode(bytes, OpenAiDecoder::new("openai"), usize::MAX);
    block_on(events.fold(0usize, |n, e| async move {
        match e {
            Ok(StreamEvent::ToolCall(c)) => n + c.arguments.len(),
            Ok(_) => n,
            Err(f) => panic!("decode failed: {f:?}"),
        }
    }))
}

/// Frames `chunks` with pablo's parser (no limit, so it cannot fail) and returns the data bytes
/// it dispatched.
fn sse_frame_data_bytes(chunks: &[Bytes]) -> usize {
    let mut parser = SseParser::new(usize::MAX);
    let mut out = Vec::new();
    let mut n = 0;
    for c in chunks {
        parser
            .feed(c, &mut out)
            .expect("framing without a limit cannot fail");
        n += out.drain(..).map(|e| e.data.len()).sum::<usize>();
    }
    n
}

/// A deterministic stream: tool calls whose arguments (a file's content, JSON-escaped) arrive in
/// fragments of 1–12 characters, the way models stream `fs.write` arguments.
/// Returns the stream, its `data:` payloads, and the total bytes of tool-call arguments in it.
fn recorded_stream() -> (Vec<u8>, Vec<Vec<u8>>, usize) {
    let mut out = String::with_capacity(TARGET_BYTES + 4096);
    let mut payloads = Vec::new();
    let mut push = |out: &mut String, data: String| {
        out.push_str("data: ");
        out.push_str(&data);
        out.push_str("\n\n");
        payloads.push(data.into_bytes());
    };
    let source = "fn main() {\n    println!(\"héllo, wörld\\t{}\", 42);\n}\n// \"quoted\" → ✓\n";
    let chars: Vec<char> = source.chars().collect();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64: deterministic, no dependency.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut call = 0u32;
    let mut pos = 0usize;
    let mut arg_bytes = 0usize;
    while out.len() < TARGET_BYTES {
        push(
            &mut out,
            json!({"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m",
                   "choices":[{"index":0,"delta":{"tool_calls":[{"index":call,"id":format!("call_{call}"),
                   "type":"function","function":{"name":"fs_write","arguments":""}}]},"finish_reason":null}]})
            .to_string(),
        );
        for _ in 0..2_000 {
            let len = 1 + (next() % 12) as usize;
            let frag: String = (0..len).map(|i| chars[(pos + i) % chars.len()]).collect();
            pos += len;
            arg_bytes += frag.len();
            push(
                &mut out,
                json!({"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m",
                       "choices":[{"index":0,"delta":{"tool_calls":[{"index":call,
                       "function":{"arguments":frag}}]},"finish_reason":null}]})
                .to_string(),
            );
        }
        call += 1;
    }
    push(
        &mut out,
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
    );
    push(
        &mut out,
        json!({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}).to_string(),
    );
    out.push_str("data: [DONE]\n\n");
    (out.into_bytes(), payloads, arg_bytes)
}

fn bench(c: &mut Criterion) {
    let (stream, payloads, arg_bytes) = recorded_stream();
    let all = Bytes::from(stream.clone());
    let chunks: Vec<Bytes> = (0..all.len())
        .step_by(NETWORK_CHUNK)
        .map(|i| all.slice(i..(i + NETWORK_CHUNK).min(all.len())))
        .collect();
    let whole = vec![all.clone()];
    // The decoded arguments must be the same however the bytes arrive.
    assert_eq!(sse_decode_openai(chunks.clone()), arg_bytes);
    assert_eq!(sse_decode_openai(whole.clone()), arg_bytes);

    let mut group = c.benchmark_group("sse_decode");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(10);
    group.bench_function("decode_openai_16k_chunks", |b| {
        b.iter(|| sse_decode_openai(chunks.clone()))
    });
    group.bench_function("decode_openai_one_10mb_chunk", |b| {
        b.iter(|| sse_decode_openai(whole.clone()))
    });
    group.bench_function("serde_json_from_slice_data_lines", |b| {
        b.iter(|| {
            payloads
                .iter()
                .map(|p| {
                    serde_json::from_slice::<serde_json::Value>(p)
                        .map(|v| v.is_object() as usize)
                        .unwrap_or(0)
                })
                .sum::<usize>()
        })
    });
    group.bench_function("serde_json_from_slice_data_lines_ignored_any", |b| {
        b.iter(|| {
            payloads
                .iter()
                .filter(|p| serde_json::from_slice::<serde::de::IgnoredAny>(p).is_ok())
                .count()
        })
    });
    group.finish();

    // The framing alone, pablo's and the crate's, on the first MiB of the same stream.
    let mib = all.slice(..1024 * 1024);
    let mut group = c.benchmark_group("sse_framing_1mib");
    group.throughput(Throughput::Bytes(mib.len() as u64));
    group.sample_size(10);
    group.bench_function("pablo_one_chunk", |b| {
        b.iter(|| sse_frame_data_bytes(std::slice::from_ref(&mib)))
    });
    group.bench_function("eventsource_stream_one_chunk", |b| {
        b.iter(|| eventsource_only(vec![mib.clone()]))
    });
    group.finish();

    // One `data:` line that never ends, in 16 KiB chunks: pablo's framing is linear in it; the
    // crate re-reads its buffer for every chunk.
    let mut group = c.benchmark_group("sse_unterminated_line");
    group.sample_size(10);
    for mib in [1usize, 2, 4] {
        let mut line = b"data: ".to_vec();
        line.resize(mib * 1024 * 1024, b'x');
        let line = Bytes::from(line);
        let chunks: Vec<Bytes> = (0..line.len())
            .step_by(NETWORK_CHUNK)
            .map(|i| line.slice(i..(i + NETWORK_CHUNK).min(line.len())))
            .collect();
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_function(format!("pablo_{mib}mib"), |b| {
            b.iter(|| sse_frame_data_bytes(&chunks))
        });
        group.bench_function(format!("eventsource_stream_{mib}mib"), |b| {
            b.iter(|| eventsource_only(chunks.clone()))
        });
    }
    group.finish();
}

fn eventsource_only(chunks: Vec<Bytes>) -> usize {
    let events =
        futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>)).eventsource();
    block_on(events.fold(
        0usize,
        |n, e| async move { n + e.map_or(0, |e| e.data.len()) },
    ))
}

criterion_group!(benches, bench);
criterion_main!(benches);
