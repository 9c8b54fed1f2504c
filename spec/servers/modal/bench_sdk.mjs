#!/usr/bin/env node
// Baseline for sandkit's Modal benchmarks: the official SDK modal@0.7.6
// against a running reference server.
//
//   node bench_sdk.mjs <server-url> [runs]      e.g. http://127.0.0.1:41234 20
//   node bench_sdk.mjs <server-url> --wide N    N execs at once (bench/scale.lua)
//
// Prints one JSON line {"exec_true_median_ms":..,"stdout_10mib_ms":..,
// "exec_true_cpu_us":..,"stdout_10mib_cpu_ms":..}:
// - exec_true_median_ms: median over `runs` (default 20) of exec(["true"])
//   until its exit code and both (empty) output streams are in, after one
//   warm-up exec that pays for SandboxGetTaskId and router access;
// - stdout_10mib_ms: exec(["head","-c","10485760","/dev/zero"]) in binary
//   mode, until all 10 MiB are read and the exit code is in;
// - exec_true_cpu_us, stdout_10mib_cpu_ms: this process's CPU time (user +
//   system, all threads: process.cpuUsage) over the same spans, per exec.
// With --wide N it instead prints {"n":N,"wall_ms":..,"growth_kb":..,
// "failures":..,"first_error":..,"peak_reset":..}: after three warm-up execs
// one at a time, N exec(["true"]) at once (Promise.all, each until its exit
// code and both streams are in); growth_kb is this process's peak RSS
// growth over the span (VmHWM reset through /proc/self/clear_refs, else
// process.memoryUsage().rss sampled every 5 ms), the same measure as
// sandkit's scale child.
// Credentials: MODAL_TOKEN_ID / MODAL_TOKEN_SECRET, default ak-test / as-test
// (the server's defaults). A user's ~/.modal.toml is never read.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

import fs from 'node:fs';

const [url, runsArg, wideArg] = process.argv.slice(2);
const wide = runsArg === '--wide' ? Number(wideArg) | 0 : 0;
if (!url || !/^https?:\/\//.test(url) || (runsArg === '--wide' && wide < 1)) {
  process.stderr.write('usage: node bench_sdk.mjs <server-url> [runs | --wide N]\n');
  process.exit(2);
}
const runs = Math.max(1, Number(runsArg ?? 20) | 0);
const HERE = path.dirname(fileURLToPath(import.meta.url));

process.env.MODAL_SERVER_URL = url;
process.env.MODAL_TOKEN_ID ||= 'ak-test';
process.env.MODAL_TOKEN_SECRET ||= 'as-test';
process.env.MODAL_CONFIG_PATH = path.join(HERE, 'does-not-exist.modal.toml');
process.env.MODAL_LOGLEVEL ||= 'error';
delete process.env.MODAL_PROFILE;
const { ModalClient } = await import('modal'); // after the env: read at load

async function drain(stream) {
  const reader = stream.getReader();
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (value) n += value.length;
    if (done) return n;
  }
}

function statusKb(field) {
  const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${field}:\\s*(\\d+)\\s*kB`));
  return m ? Number(m[1]) : 0;
}

function resetPeakRss() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

// N execs of `true` at once; see the header for what is printed.
async function wideRun(sb, n) {
  for (let i = 0; i < 3; i++) await timedExec(sb, ['true']); // warm-up
  if (globalThis.gc) { globalThis.gc(); globalThis.gc(); }
  const reset = resetPeakRss();
  const rss0 = statusKb('VmRSS');
  let sampled = process.memoryUsage().rss;
  const sampler = reset ? null : setInterval(() => {
    sampled = Math.max(sampled, process.memoryUsage().rss);
  }, 5);
  let failures = 0;
  let firstError = '';
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, () => timedExec(sb, ['true']).then((r) => {
    if (r.code !== 0) throw new Error(`true exited ${r.code}`);
  }).catch((e) => {
    failures++;
    firstError ||= String(e?.message ?? e).slice(0, 200);
  })));
  const wallMs = performance.now() - t0;
  if (sampler) clearInterval(sampler);
  const growthKb = reset ? statusKb('VmHWM') - rss0 : Math.max(sampled, process.memoryUsage().rss) / 1024 - rss0;
  return { n, wall_ms: wallMs, growth_kb: growthKb, failures, first_error: firstError, peak_reset: reset };
}

async function timedExec(sb, argv, params) {
  const t0 = performance.now();
  const p = await sb.exec(argv, params);
  const [out, , code] = await Promise.all([drain(p.stdout), drain(p.stderr), p.wait()]);
  return { ms: performance.now() - t0, out, code };
}

// exec(['true']) `runs` times one at a time, then one 10 MiB transfer; see the header.
async function serialRun(sb) {
  await timedExec(sb, ['true']); // warm-up
  const times = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const r = await timedExec(sb, ['true']);
    if (r.code !== 0) throw new Error(`true exited ${r.code}`);
    times.push(r.ms);
  }
  const cpuExec = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;

  const SIZE = 10 * 1024 * 1024;
  const cpu1 = process.cpuUsage();
  const big = await timedExec(sb, ['head', '-c', String(SIZE), '/dev/zero'], { mode: 'binary' });
  const cpuBig = process.cpuUsage(cpu1);
  if (big.code !== 0 || big.out !== SIZE) throw new Error(`10 MiB transfer: exit ${big.code}, ${big.out} bytes`);

  const round = (x) => Math.round(x * 100) / 100;
  process.stdout.write(`${JSON.stringify({
    exec_true_median_ms: round(median), stdout_10mib_ms: round(big.ms),
    exec_true_cpu_us: round((cpuExec.user + cpuExec.system) / runs),
    stdout_10mib_cpu_ms: round((cpuBig.user + cpuBig.system) / 1000),
  })}\n`);
}

const mc = new ModalClient();
const app = await mc.apps.fromName('mastra', { createIfMissing: true });
const sb = await mc.sandboxes.create(app, mc.images.fromRegistry('ubuntu:22.04'), {
  name: `bench-sdk-${process.pid}-${Date.now()}`,
});
try {
  if (wide) {
    process.stdout.write(`${JSON.stringify(await wideRun(sb, wide))}\n`);
  } else {
    await serialRun(sb);
  }
} finally {
  await sb.terminate().catch(() => {});
}
