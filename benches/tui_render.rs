//! TUI benchmarks.
//!
//! 1. Frame time for a transcript of 2,000 cells carrying 10 MB of shell output, while a command
//!    streams into the last cell (the common case during a turn). Criterion reports the mean; the
//!    p99 is computed from our own timed samples of the same work and printed.
//! 2. The same, in inline mode (the default): the frame is drawn into the viewport under the
//!    scrollback through `InlineSurface`; besides time, the bytes each frame writes to the
//!    terminal and the number of full-viewport redraws after the first frame.
//! 3. An approval prompt over a new file of 20,000 lines against one of 20 lines (the bound: a
//!    frame should cost what the visible rows cost, whatever the diff's length), inline at
//!    120x40: each iteration presses PageDown and draws the frame. Past the end of the short diff
//!    the scroll stays clamped, so its frame is the same work as the long one's.
//! 4. `pablo demo` (the binary this bench is built with) in a real PTY: time from spawn to the end
//!    of the first frame, and resident memory once the demo sits idle.

#![allow(clippy::print_stdout)]

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use pablo_tui::bench::TuiRenderScene;
use ratatui::layout::Size;

fn render(c: &mut Criterion) {
    // The transcript (see `TuiRenderScene::streaming`) on a full 160x48 screen.
    let mut scene = TuiRenderScene::streaming(Size::new(160, 48), false);
    let cold = Instant::now();
    scene.draw();
    let cold = cold.elapsed();
    let mut n = 0;
    c.bench_function("frame_2000_cells_10MB_streaming", |b| {
        b.iter(|| {
            n += 1;
            scene.stream(n);
        })
    });
    // Our own samples for the tail: wall-clock time, and the thread's CPU time (the machine is
    // shared, and a frame that was preempted shows up in wall time only).
    let mut samples: Vec<Duration> = Vec::with_capacity(3000);
    let mut cpu: Vec<Duration> = Vec::with_capacity(3000);
    for k in 0..3000 {
        let (t, c) = (Instant::now(), thread_cpu());
        scene.stream(n + k);
        samples.push(t.elapsed());
        cpu.push(thread_cpu().saturating_sub(c));
    }
    samples.sort();
    cpu.sort();
    let cpu_p99 = cpu[(cpu.len() as f64 * 0.99) as usize];
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "tui frame (2,000 cells, 10 MB output, 160x48): first frame {:.2} ms; streaming frames: mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} samples)",
        cold.as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3,
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
        samples.len()
    );
    println!(
        "tui frame thread CPU time: p50 {:.3} ms, p99 {:.3} ms",
        cpu[cpu.len() / 2].as_secs_f64() * 1e3,
        cpu_p99.as_secs_f64() * 1e3
    );
}

/// CPU time consumed by the calling thread.
#[allow(unsafe_code)]
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is supported on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// What one run of a terminal program in a PTY showed.
struct Startup {
    /// Spawn to the first visible text on the emulated screen.
    first_paint: Duration,
    /// Spawn to the end of the first synchronized-update frame, when the program uses them.
    first_frame: Option<Duration>,
    /// Resident memory once idle, KiB.
    rss_kib: u64,
}

/// Spawns `program args` in a 120x40 PTY with its own HOME and XDG dirs (and `config` as its user
/// config, when given), waits until `ready` holds for the screen text (or 20 s pass), lets it sit
/// idle for a second, reads its RSS, and ends it.
fn measure(
    program: &str,
    args: &[String],
    config: Option<&str>,
    run: usize,
    ready: fn(&str) -> bool,
) -> Option<Startup> {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let home = std::env::temp_dir().join(format!("pablo-bench-{}-{run}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).ok()?;
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .ok()?;
    let mut cmd = CommandBuilder::new(program);
    for a in args {
        cmd.arg(a.replace("{home}", home.to_str()?));
    }
    cmd.cwd(&home);
    cmd.env("TERM", "xterm-256color");
    cmd.env("HOME", &home);
    for v in [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "CODEX_HOME",
    ] {
        let d = home.join(v);
        let _ = std::fs::create_dir_all(&d);
        cmd.env(v, d);
    }
    if let Some(config) = config {
        let dir = home.join("XDG_CONFIG_HOME").join("pablo");
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::write(dir.join("config.toml"), config).ok()?;
    }
    let started = Instant::now();
    let mut child = pty.slave.spawn_command(cmd).ok()?;
    let pid = child.process_id()?;
    let mut reader = pty.master.try_clone_reader().ok()?;
    let writer = Arc::new(Mutex::new(pty.master.take_writer().ok()?));
    let nz = |n: u16| std::num::NonZeroU16::new(n);
    let parser = Arc::new(Mutex::new(vt100::Parser::new(nz(40)?, nz(120)?, 0)));
    let marks = Arc::new(Mutex::new((None::<Duration>, None::<Duration>)));
    let (p, m, w) = (parser.clone(), marks.clone(), writer.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        let mut tail: Vec<u8> = Vec::new();
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut parser = p.lock().ok()?;
            parser.process(&buf[..n]);
            // Answer "where is the cursor?" as a terminal does: the inline TUI asks once at
            // start-up, and an unanswered question costs crossterm's 2 s timeout.
            if buf[..n].windows(4).any(|x| x == b"\x1b[6n") {
                let (row, col) = parser.screen().cursor_position();
                let answer = format!("\x1b[{};{}R", row + 1, col + 1);
                let _ = w.lock().ok()?.write_all(answer.as_bytes());
            }
            let mut marks = m.lock().ok()?;
            if marks.0.is_none() && !parser.screen().contents().trim().is_empty() {
                marks.0 = Some(started.elapsed());
            }
            tail.extend_from_slice(&buf[..n]);
            if marks.1.is_none() && tail.windows(8).any(|w| w == b"\x1b[?2026l") {
                marks.1 = Some(started.elapsed());
            }
            let keep = tail.len().saturating_sub(8);
            tail.drain(..keep);
        }
        Some(())
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let text = parser.lock().ok()?.screen().contents();
        if ready(&text) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    let _ = writer.lock().ok()?.write_all(b"\x03");
    std::thread::sleep(Duration::from_millis(150));
    let _ = writer.lock().ok()?.write_all(b"\x03");
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&home);
    let marks = *marks.lock().ok()?;
    Some(Startup {
        first_paint: marks.0?,
        first_frame: marks.1,
        rss_kib,
    })
}

fn report(name: &str, runs: &[Startup]) {
    if runs.is_empty() {
        println!("{name}: could not be measured");
        return;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut paint: Vec<f64> = runs.iter().map(|r| ms(r.first_paint)).collect();
    paint.sort_by(f64::total_cmp);
    let mut frame: Vec<f64> = runs.iter().filter_map(|r| r.first_frame.map(ms)).collect();
    frame.sort_by(f64::total_cmp);
    let rss: Vec<u64> = runs.iter().map(|r| r.rss_kib).collect();
    let frame_text = if frame.is_empty() {
        "no synchronized frames".to_string()
    } else {
        format!(
            "end of first synchronized frame median {:.1} ms",
            frame[frame.len() / 2]
        )
    };
    println!(
        "{name} in a 120x40 PTY ({} runs): first paint median {:.1} ms (min {:.1}, max {:.1}); {frame_text}; idle RSS mean {:.1} MiB (max {:.1} MiB)",
        runs.len(),
        paint[paint.len() / 2],
        paint[0],
        paint[paint.len() - 1],
        rss.iter().sum::<u64>() as f64 / rss.len() as f64 / 1024.0,
        *rss.iter().max().unwrap_or(&0) as f64 / 1024.0,
    );
}

use std::io::Write;

fn startup() {
    let args = vec![
        "demo".to_string(),
        "--dir".to_string(),
        "{home}/demo".to_string(),
    ];
    let runs: Vec<Startup> = (0..5)
        .filter_map(|i| {
            measure(env!("CARGO_BIN_EXE_pablo"), &args, None, i, |s| {
                // Idle: waiting for the person at the first prompt (or done, without tools).
                s.contains("[y] Allow once") || s.contains("Ask pablo to do something")
            })
        })
        .collect();
    report(
        "pablo demo [this bench's profile, not the release build: see benches/shipped.rs]",
        &runs,
    );
    let mut full_screen = args.clone();
    full_screen.push("--alt-screen".to_string());
    let runs: Vec<Startup> = (0..5)
        .filter_map(|i| {
            measure(
                env!("CARGO_BIN_EXE_pablo"),
                &full_screen,
                None,
                50 + i,
                |s| s.contains("[y] Allow once") || s.contains("Ask pablo to do something"),
            )
        })
        .collect();
    report("pablo demo --alt-screen [this bench's profile]", &runs);
    // Other builds of pablo measured the same way in the same run (`name=path,name=path`), to
    // compare release profiles.
    if let Some(list) = std::env::var_os("PABLO_BENCH_BINARIES") {
        for (i, entry) in list.to_string_lossy().split(',').enumerate() {
            let Some((name, path)) = entry.split_once('=') else {
                continue;
            };
            let runs: Vec<Startup> = (0..5)
                .filter_map(|j| {
                    measure(path, &args, None, 200 + 10 * i + j, |s| {
                        s.contains("[y] Allow once") || s.contains("Ask pablo to do something")
                    })
                })
                .collect();
            report(&format!("pablo demo ({name})"), &runs);
        }
    }
    // Another terminal agent, measured the same way, when one is named (its idle screen without a
    // key is its sign-in screen).
    if let Some(peer) = std::env::var_os("PABLO_BENCH_PEER") {
        let peer = peer.to_string_lossy().into_owned();
        let runs: Vec<Startup> = (0..5)
            .filter_map(|i| measure(&peer, &[], None, 100 + i, |s| !s.trim().is_empty()))
            .collect();
        report(&peer, &runs);
    }
}

/// Plain `pablo` (a local provider that is never called before a prompt) with no MCP server and
/// with three `server-everything` servers configured, in the same run: servers start in the
/// background, so the first frame should not wait for them.
fn mcp_startup() {
    let index = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/mcp_servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let node = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    let (Some(node), true) = (node, index.is_file()) else {
        println!(
            "pablo start-up with MCP servers: not measured (needs node and `npm ci` in tests/mcp_servers)"
        );
        return;
    };
    let base = "provider = \"ollama\"\nmodel = \"bench\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let mut with_servers = base.to_string();
    for name in ["one", "two", "three"] {
        with_servers.push_str(&format!(
            "\n[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n",
            node.display().to_string(),
            index.display().to_string()
        ));
    }
    // Servers that cost nothing to start and never answer: what the first frame waits for when
    // the machine is not also busy starting three node programs.
    let mut silent = base.to_string();
    for name in ["one", "two", "three"] {
        silent.push_str(&format!(
            "\n[mcp_servers.{name}]\ncommand = \"sleep\"\nargs = [\"60\"]\n"
        ));
    }
    let ready: fn(&str) -> bool = |s| s.contains("Ask pablo to do something");
    for (name, config, offset) in [
        ("pablo, no MCP server", base.to_string(), 300),
        (
            "pablo, 3 MCP servers (server-everything)",
            with_servers,
            400,
        ),
        (
            "pablo, 3 MCP servers that never answer (sleep 60)",
            silent,
            500,
        ),
    ] {
        let runs: Vec<Startup> = (0..5)
            .filter_map(|i| {
                measure(
                    env!("CARGO_BIN_EXE_pablo"),
                    &[],
                    Some(&config),
                    offset + i,
                    ready,
                )
            })
            .collect();
        report(name, &runs);
    }
}

/// Inline mode: the same transcript and stream, drawn by the inline surface into a byte sink the
/// size of a 160x48 terminal. The first frame prints the 2,000 finished cells into the
/// scrollback; every later frame repaints only what changed in the viewport.
fn render_inline(c: &mut Criterion) {
    let size = Size::new(160, 48);
    let mut scene = TuiRenderScene::streaming(size, true);
    let cold = Instant::now();
    let first_bytes = scene.stream(0);
    let cold = cold.elapsed();
    let mut n = 0;
    c.bench_function("inline_frame_2000_cells_10MB_streaming", |b| {
        b.iter(|| {
            n += 1;
            scene.stream(n);
        })
    });
    let mut samples: Vec<Duration> = Vec::with_capacity(3000);
    let mut bytes: Vec<u64> = Vec::with_capacity(3000);
    for k in 0..3000 {
        let t = Instant::now();
        bytes.push(scene.stream(n + 1 + k));
        samples.push(t.elapsed());
    }
    samples.sort();
    bytes.sort();
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    let bpct = |p: f64| bytes[((bytes.len() as f64 * p) as usize).min(bytes.len() - 1)];
    // A full repaint writes at least one byte per cell of the screen.
    let full_screen = u64::from(size.width) * u64::from(size.height);
    let full_redraws = bytes.iter().filter(|b| **b >= full_screen).count();
    println!(
        "inline frame (2,000 cells, 10 MB output, 160x48): first frame {:.2} ms writing {} bytes into the scrollback; streaming frames: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; bytes per frame p50 {}, p99 {}, max {}; frames writing a full screen's worth: {} of {}",
        cold.as_secs_f64() * 1e3,
        first_bytes,
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
        bpct(0.50),
        bpct(0.99),
        bytes[bytes.len() - 1],
        full_redraws,
        bytes.len()
    );
}

fn approval_pagedown(c: &mut Criterion) {
    let mut group = c.benchmark_group("approval_pagedown");
    for lines in [20, 20_000] {
        // The approval prompt for creating a file of `lines` lines, inline at 120x40.
        let mut scene = TuiRenderScene::approval(Size::new(120, 40), lines);
        // The first frame lays the diff out; the figure is the frames after it.
        scene.page_down();
        group.bench_function(format!("new_file_{lines}_lines"), |b| {
            b.iter(|| scene.page_down())
        });
    }
    // An edit replacing N lines, each changed in two words: the first frame finds the changed
    // words of what it draws (the diff view's word emphasis), PageDown those of the next page.
    // The first frame of a file of as many new lines, beside it, is the same prompt without them.
    for lines in [200, 2_000] {
        group.bench_function(format!("new_file_{lines}_lines_first_frame"), |b| {
            b.iter_batched(
                || TuiRenderScene::approval(Size::new(120, 40), lines),
                |mut scene| scene.draw(),
                criterion::BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("replaced_{lines}_lines_first_frame"), |b| {
            b.iter_batched(
                || TuiRenderScene::approval_replacing(Size::new(120, 40), lines),
                |mut scene| scene.draw(),
                criterion::BatchSize::LargeInput,
            )
        });
        let mut scene = TuiRenderScene::approval_replacing(Size::new(120, 40), lines);
        scene.page_down();
        group.bench_function(format!("replaced_{lines}_lines"), |b| {
            b.iter(|| scene.page_down())
        });
    }
    group.finish();
}

criterion_group!(benches, render, render_inline, approval_pagedown);

fn main() {
    benches();
    startup();
    mcp_startup();
    Criterion::default().configure_from_args().final_summary();
}
