// End-to-end check of `pablo acp` with the official ACP TypeScript client library.
//
// Usage: node e2e.mjs PABLO_BIN WORKSPACE [pablo flags…]
// Environment:
//   E2E_PROMPT          send this prompt and expect `end_turn` (needs a model; see tests/acp.rs)
//   E2E_EXPECT_TEXT     the agent text the prompt must stream
//   E2E_EXPECT_NEW_ERROR  instead of a prompt: session/new must fail with this `data.code`
//   E2E_BUFFERS         JSON {absolute path: text}: advertise `fs` and serve these unsaved
//                       buffers on fs/read_text_file (other paths from disk); writes replace the
//                       buffer and are reported in `writes`, never saved to disk
//   E2E_TERMINALS       "1": advertise `terminal` and run terminal/create commands for real; the
//                       requests are reported in `terminalCalls`, the created commands in `terminals`
// Prints one JSON line with what it saw; exits 0 when every expectation held.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, workspace, ...flags] = process.argv.slice(2);
if (!bin || !workspace) {
  console.error("usage: node e2e.mjs PABLO_BIN WORKSPACE [flags…]");
  process.exit(2);
}

const child = spawn(bin, ["acp", ...flags], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: [], text: "", reads: [], writes: [], terminals: [], terminalCalls: [] };
const withTerminals = process.env.E2E_TERMINALS === "1";
// The editor's terminals: the child, its output so far, and its exit once known.
const terminals = new Map();
const buffers = process.env.E2E_BUFFERS ? JSON.parse(process.env.E2E_BUFFERS) : null;
const failures = [];
const expect = (cond, what) => {
  if (!cond) failures.push(what);
};

const app = acp
  .client({ name: "pablo-e2e" })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push(params.update.sessionUpdate);
    if (params.update.sessionUpdate === "agent_message_chunk" && params.update.content.type === "text") {
      seen.text += params.update.content.text;
    }
  })
  .onRequest("session/request_permission", ({ params }) => {
    seen.permissions.push(params.options.map((o) => o.optionId));
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    seen.reads.push(params.path);
    const content = params.path in buffers ? buffers[params.path] : readFileSync(params.path, "utf8");
    return { content };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    seen.writes.push({ path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest("terminal/create", ({ params }) => {
    seen.terminalCalls.push("terminal/create");
    seen.terminals.push({ command: params.command, args: params.args, cwd: params.cwd, outputByteLimit: params.outputByteLimit });
    const id = `t${terminals.size + 1}`;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["pipe", "pipe", "pipe"] });
    const term = { child, output: "", exit: null };
    term.exited = new Promise((resolve) => {
      child.once("close", (code, signal) => {
        term.exit = { exitCode: code, signal: signal ?? null };
        resolve(term.exit);
      });
    });
    child.stdout.on("data", (d) => (term.output += d));
    child.stderr.on("data", (d) => (term.output += d));
    terminals.set(id, term);
    return { terminalId: id };
  })
  .onRequest("terminal/wait_for_exit", async ({ params }) => {
    seen.terminalCalls.push("terminal/wait_for_exit");
    return await terminals.get(params.terminalId).exited;
  })
  .onRequest("terminal/output", ({ params }) => {
    seen.terminalCalls.push("terminal/output");
    const term = terminals.get(params.terminalId);
    return { output: term.output, truncated: false, exitStatus: term.exit };
  })
  .onRequest("terminal/kill", ({ params }) => {
    seen.terminalCalls.push("terminal/kill");
    terminals.get(params.terminalId).child.kill("SIGKILL");
    return {};
  })
  .onRequest("terminal/release", ({ params }) => {
    seen.terminalCalls.push("terminal/release");
    const term = terminals.get(params.terminalId);
    if (term.exit === null) term.child.kill("SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  });

const timer = setTimeout(() => {
  console.error("e2e: timed out after 30 s");
  child.kill();
  process.exit(1);
}, 30_000);

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: !!buffers, writeTextFile: !!buffers }, terminal: withTerminals },
      clientInfo: { name: "pablo-e2e", version: "0" },
    });
    seen.protocolVersion = init.protocolVersion;
    seen.agent = init.agentInfo?.name;
    expect(init.protocolVersion === 1, "protocolVersion 1");
    expect(init.agentInfo?.name === "pablo", "agentInfo.name pablo");

    if (process.env.E2E_EXPECT_NEW_ERROR) {
      try {
        await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
        failures.push("session/new should have failed");
      } catch (e) {
        seen.newError = e?.data?.code ?? null;
        expect(seen.newError === process.env.E2E_EXPECT_NEW_ERROR, `session/new error ${process.env.E2E_EXPECT_NEW_ERROR}`);
      }
      return;
    }

    const session = await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
    expect(typeof session.sessionId === "string", "a session id");
    if (process.env.E2E_PROMPT) {
      const answer = await ctx.request("session/prompt", {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: process.env.E2E_PROMPT }],
      });
      seen.stopReason = answer.stopReason;
      expect(answer.stopReason === "end_turn", "stopReason end_turn");
      if (process.env.E2E_EXPECT_TEXT !== undefined) {
        expect(seen.text === process.env.E2E_EXPECT_TEXT, `text ${JSON.stringify(process.env.E2E_EXPECT_TEXT)}`);
      }
    }
  });
} catch (e) {
  failures.push(`connection: ${e?.message ?? e}`);
}
clearTimeout(timer);
child.stdin.end();
await new Promise((resolve) => child.once("exit", resolve));
seen.exitCode = child.exitCode;
expect(child.exitCode === 0, "pablo exits 0 when stdin closes");
seen.failures = failures;
console.log(JSON.stringify(seen));
process.exit(failures.length === 0 ? 0 : 1);
