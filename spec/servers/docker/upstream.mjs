// Upstream's DockerSandbox (@mastra/docker 0.3.0, dockerode) on a daemon's
// unix socket, for spec/docker_interop_spec.lua and bench/docker.lua.
//   node upstream.mjs <socket> <json>
// json: { id, image, op: "start" | "adopt" | "destroy", command?, args?, env? }
//   start:   start (create, or reconnect by label), run command, print the
//            result and the container id; the container is left running
//   adopt:   the same, for a container another client made (reconnect)
//   destroy: destroy by label (a fresh instance that never started)
//   bench:   { n, command }: n execs one after another; prints each one's ms
//            and the process's CPU time
//   fleet:   { n, command }: n sandboxes started with Promise.all, the
//            command in each, all destroyed; prints the wall time
// Prints one JSON line; exits 1 with { error } on failure.
import { DockerSandbox } from '@mastra/docker';

const [socketPath, json] = process.argv.slice(2);
const req = JSON.parse(json);

const sandbox = new DockerSandbox({
  id: req.id,
  image: req.image,
  env: req.env,
  dockerOptions: { socketPath },
});

async function fleet() {
  const t0 = process.hrtime.bigint();
  const all = Array.from({ length: req.n }, () => new DockerSandbox({ image: req.image, dockerOptions: { socketPath } }));
  await Promise.all(all.map(s => s.start()));
  const results = await Promise.all(all.map(s => s.executeCommand(req.command)));
  if (results.some(r => r.exitCode !== 0)) throw new Error('a fleet command failed');
  await Promise.all(all.map(s => s.destroy()));
  return { wallMs: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function main() {
  if (req.op === 'fleet') return fleet();
  if (req.op === 'destroy') {
    await sandbox.destroy();
    return { destroyed: true };
  }
  await sandbox.start();
  const info = await sandbox.getInfo();
  const out = { containerId: info.metadata?.containerId, labels: info.metadata?.labels };
  if (req.op === 'bench') {
    await sandbox.executeCommand(req.command); // warm-up, as sandkit's side
    const cpu0 = process.cpuUsage();
    const ms = [];
    for (let i = 0; i < req.n; i++) {
      const t0 = process.hrtime.bigint();
      const r = await sandbox.executeCommand(req.command);
      if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}: ${r.stderr}`);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const cpu = process.cpuUsage(cpu0);
    out.ms = ms;
    out.cpuUs = cpu.user + cpu.system;
    return out;
  }
  if (req.command) {
    const r = await sandbox.executeCommand(req.command, req.args ?? []);
    out.result = { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, success: r.success };
  }
  return out;
}

main().then(
  out => { process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); },
  err => { process.stdout.write(JSON.stringify({ error: String(err?.stack ?? err) }) + '\n'); process.exit(1); },
);
