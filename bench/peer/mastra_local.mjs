// The peer in the benchmark: Mastra's own LocalSandbox (@mastra/core, the
// version pinned in package.json) on the jobs bench/run.lua gives sandkit.
// Prints one JSON line, as the C baselines do.
//
//   node bench/peer/mastra_local.mjs exec    WORKDIR PER WARMUP   -> samples_us
//   node bench/peer/mastra_local.mjs fanout  WORKDIR WIDTH        -> samples_ms (1)
//   node bench/peer/mastra_local.mjs capture WORKDIR SIZE         -> samples_ms (1), bytes
//
// Starting Node and the sandbox is outside the timing, as it is for sandkit.
import { LocalSandbox } from '@mastra/core/workspace';

const [job, workdir, a, b] = process.argv.slice(2);
const now = () => process.hrtime.bigint();
const usSince = (t0) => Number(now() - t0) / 1e3;

function mustSucceed(r, what) {
  if (!r || r.exitCode !== 0) throw new Error(`${what}: exit ${r && r.exitCode}, stderr ${r && r.stderr}`);
  return r;
}

const sb = new LocalSandbox({ workingDirectory: workdir });
await sb._start();
const out = { job, version: (await import('@mastra/core/package.json', { with: { type: 'json' } })).default.version };
try {
  if (job === 'exec') {
    const per = Number(a), warmup = Number(b ?? 3);
    for (let i = 0; i < warmup; i++) mustSucceed(await sb.executeCommand('true'), 'true');
    out.samples_us = [];
    for (let i = 0; i < per; i++) {
      const t0 = now();
      const r = await sb.executeCommand('true');
      out.samples_us.push(usSince(t0));
      mustSucceed(r, 'true');
    }
  } else if (job === 'fanout') {
    const width = Number(a);
    const round = async () => {
      const t0 = now();
      const rs = await Promise.all(Array.from({ length: width }, (_, i) => sb.executeCommand('echo', [String(i + 1)])));
      const ms = usSince(t0) / 1e3;
      rs.forEach((r, i) => {
        if (mustSucceed(r, 'echo').stdout !== `${i + 1}\n`) throw new Error(`fan-out task ${i + 1}: got ${r.stdout}`);
      });
      return ms;
    };
    await round(); // warm-up, as on the sandkit side
    out.samples_ms = [await round()];
  } else if (job === 'capture') {
    const size = a;
    mustSucceed(await sb.executeCommand('head -c 64K /dev/zero'), 'warm-up');
    const t0 = now();
    const r = mustSucceed(await sb.executeCommand(`head -c ${size} /dev/zero`), 'capture');
    out.samples_ms = [usSince(t0) / 1e3];
    out.bytes = Buffer.byteLength(r.stdout);
  } else {
    throw new Error(`unknown job ${job}`);
  }
} finally {
  await sb._destroy();
}
process.stdout.write(JSON.stringify(out) + '\n');
