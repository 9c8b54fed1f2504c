// Proof that the reference server is faithful: the official npm SDK
// `modal` 0.7.6 (a pinned devDependency, installed by `npm ci`) runs its
// sandbox flow against server.mjs. If the SDK and the server disagree, the
// server is wrong. Tests are top-level so each one is a TAP line.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(HERE, '..', 'server.mjs');

let srv;
let port;
let adminPort;
let modal; // the SDK module, imported once the environment is set

async function startServer() {
  // sdk_bwrap.test.mjs runs this file again under --isolation bwrap
  const isolation = process.env.MODAL_TEST_ISOLATION || 'none';
  srv = spawn(process.execPath, [SERVER, '--port', '0', '--isolation', isolation], { stdio: ['pipe', 'pipe', 'pipe'] });
  srv.stderr.on('data', (d) => { if (process.env.MODAL_TEST_VERBOSE) process.stderr.write(d); });
  const line = await new Promise((resolve, reject) => {
    srv.once('exit', (c) => reject(new Error(`server exited early (${c})`)));
    readline.createInterface({ input: srv.stdout }).once('line', resolve);
  });
  const m = /^LISTENING (\d+) ADMIN (\d+)$/.exec(line);
  assert.ok(m, `unexpected first line: ${line}`);
  port = Number(m[1]);
  adminPort = Number(m[2]);
}

async function admin(method, p, body) {
  const res = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
    method, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}
const callLog = () => admin('GET', '/__admin/log');
const setFaults = (f) => admin('POST', '/__admin/faults', f);

before(async () => {
  await startServer();
  // Everything the SDK reads (docs/protocols/modal.md §1.1). MODAL_CONFIG_PATH must be set
  // before the import: the SDK reads the config file at module load.
  process.env.MODAL_SERVER_URL = `http://127.0.0.1:${port}`;
  process.env.MODAL_TOKEN_ID = 'ak-test';
  process.env.MODAL_TOKEN_SECRET = 'as-test';
  process.env.MODAL_CONFIG_PATH = path.join(HERE, 'does-not-exist.modal.toml');
  process.env.MODAL_LOGLEVEL = 'error';
  for (const k of ['MODAL_PROFILE', 'MODAL_ENVIRONMENT', 'MODAL_IMAGE_BUILDER_VERSION', 'MODAL_MAX_THROTTLE_WAIT']) {
    delete process.env[k];
  }
  modal = await import('modal');
  assert.equal(new modal.ModalClient().version(), '0.7.6');
});

after(async () => {
  if (!srv || srv.exitCode !== null) return;
  const exited = new Promise((r) => srv.once('exit', r));
  srv.stdin.end(); // the server exits on stdin EOF
  await exited;
});

beforeEach(async () => { await admin('POST', '/__admin/reset', {}); });

let seq = 0;
const uniq = (p) => `${p}-${process.pid}-${++seq}`;

async function newSandbox(mc, params = {}) {
  const app = await mc.apps.fromName('mastra', { createIfMissing: true });
  const image = mc.images.fromRegistry('ubuntu:22.04');
  return mc.sandboxes.create(app, image, { name: uniq('sb'), ...params });
}

async function run(sb, argv, params) {
  const p = await sb.exec(argv, params);
  const [stdout, stderr] = await Promise.all([p.stdout.readText(), p.stderr.readText()]);
  return { stdout, stderr, code: await p.wait() };
}

test('sandbox flow: create with name, exec, fromName, snapshot, terminate', async () => {
  const mc = new modal.ModalClient();
  const app = await mc.apps.fromName('mastra', { createIfMissing: true });
  assert.match(app.appId, /^ap-/);
  const image = mc.images.fromRegistry('ubuntu:22.04');
  const name = uniq('flow');
  const sb = await mc.sandboxes.create(app, image, { name, env: { SB_VAR: 'from-create' } });
  assert.match(sb.sandboxId, /^sb-[0-9A-Za-z]{22}$/);

  const r = await run(sb, ['sh', '-c', 'echo "out $SB_VAR $EX_VAR"; echo err >&2; exit 3'], { env: { EX_VAR: 'from-exec' } });
  assert.deepEqual(r, { stdout: 'out from-create from-exec\n', stderr: 'err\n', code: 3 });
  assert.equal((await run(sb, ['true'])).code, 0); // needs TaskExecWaitResponse.code = 0 on the wire

  // Name lookup, and the id-format check of fromId (0.7.6).
  const again = await mc.sandboxes.fromName('mastra', name);
  assert.equal(again.sandboxId, sb.sandboxId);
  assert.equal((await mc.sandboxes.fromId(sb.sandboxId)).sandboxId, sb.sandboxId);
  await assert.rejects(mc.sandboxes.fromName('mastra', uniq('nope')), modal.NotFoundError);
  await assert.rejects(mc.sandboxes.create(app, image, { name }), modal.AlreadyExistsError);
  assert.equal(await sb.poll(), null);

  // Filesystem snapshot, then a new sandbox from it under the same name.
  assert.equal((await run(sb, ['sh', '-c', 'mkdir -p data && echo persisted > data/file.txt'])).code, 0);
  const snap = await sb.snapshotFilesystem();
  assert.match(snap.imageId, /^im-/);
  assert.equal(await sb.terminate({ wait: true }), 137);
  await assert.rejects(run(sb, ['true']), modal.ClientClosedError);
  await assert.rejects(mc.sandboxes.fromName('mastra', name), modal.NotFoundError);

  const sb2 = await mc.sandboxes.create(app, snap, { name });
  assert.notEqual(sb2.sandboxId, sb.sandboxId);
  assert.deepEqual(await run(sb2, ['cat', 'data/file.txt']), { stdout: 'persisted\n', stderr: '', code: 0 });
  await sb2.terminate();

  const log = await callLog();
  const rpcs = log.map((e) => e.rpc);
  for (const rpc of ['AuthTokenGet', 'AppGetOrCreate', 'ImageGetOrCreate', 'SecretGetOrCreate', 'SandboxCreate',
    'SandboxGetTaskId', 'TaskGetCommandRouterAccess', 'TaskExecStart', 'TaskExecStdioRead', 'TaskExecWait',
    'SandboxGetFromName', 'TaskSnapshotFilesystem', 'SandboxTerminate', 'SandboxWait']) {
    assert.ok(rpcs.includes(rpc), `${rpc} was called`);
  }
  // Control-plane metadata vs router metadata (docs/protocols/modal.md §1.4, §1.8).
  const create = log.find((e) => e.rpc === 'SandboxCreate');
  for (const k of ['x-modal-client-type', 'x-modal-client-version', 'x-modal-libmodal-version', 'x-modal-token-id',
    'x-modal-token-secret', 'x-modal-auth-token', 'x-idempotency-key', 'x-retry-attempt']) {
    assert.ok(create.metadata_keys.includes(k), `SandboxCreate carries ${k}`);
  }
  assert.equal(create.metadata['x-modal-client-type'], '8');
  assert.equal(create.metadata['x-modal-libmodal-version'], 'modal-js/0.7.6');
  assert.equal(create.request.definition.timeout_secs, 300);
  const start = log.find((e) => e.rpc === 'TaskExecStart');
  assert.equal(start.path, '/modal.task_command_router.TaskCommandRouter/TaskExecStart');
  assert.ok(start.metadata_keys.includes('authorization'));
  assert.ok(!start.metadata_keys.some((k) => k.startsWith('x-modal-')));
  assert.deepEqual(start.request.env_keys, ['EX_VAR']);
  const reads = log.filter((e) => e.rpc === 'TaskExecStdioRead' && e.request.exec_id === start.request.exec_id);
  assert.deepEqual(reads.map((e) => e.request.file_descriptor ?? 0).sort(), [0, 1]);
  assert.equal(log.find((e) => e.rpc === 'TaskSnapshotFilesystem').request.ttl_seconds, -1);
});

test('exec options: workdir, stdin, exec timeout, large binary output', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc);
  assert.equal((await run(sb, ['pwd'], { workdir: '/tmp' })).stdout, '/tmp\n');

  const cat = await sb.exec(['cat']);
  await cat.stdin.writeText('hello ');
  await cat.stdin.writeText('stdin');
  await cat.stdin.close();
  assert.equal(await cat.stdout.readText(), 'hello stdin');
  assert.equal(await cat.wait(), 0);

  const slow = await sb.exec(['sleep', '30'], { timeoutMs: 1000 });
  assert.equal(await slow.wait(), 137); // killed: signal 9 -> 128 + 9

  const big = await sb.exec(['head', '-c', String(3 * 1024 * 1024), '/dev/urandom'], { mode: 'binary' });
  const bytes = await big.stdout.readBytes();
  assert.equal(bytes.length, 3 * 1024 * 1024);
  assert.equal(await big.wait(), 0);
  await sb.terminate();
});

test('sandbox view: its own root, any workdir, a private /tmp, HOME, 127 for a missing executable', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc, { workdir: '/workspace' });
  assert.deepEqual(await run(sb, ['pwd']), { stdout: '/workspace\n', stderr: '', code: 0 });
  assert.equal((await run(sb, ['sh', '-c', 'echo here > f && cat /workspace/f'])).stdout, 'here\n');
  assert.equal((await run(sb, ['pwd'], { workdir: '/app' })).stdout, '/app\n'); // Mastra's workingDirectory
  assert.equal((await run(sb, ['pwd'], { workdir: 'sub/dir' })).stdout, '/workspace/sub/dir\n');
  assert.equal((await run(sb, ['sh', '-c', 'echo "$HOME"'])).stdout, '/root\n');
  // /tmp is the sandbox's own: neither another sandbox's nor the host's
  const hostFile = `/tmp/sandkit-host-${process.pid}-${seq}`;
  fs.writeFileSync(hostFile, 'host\n');
  try {
    assert.equal((await run(sb, ['cat', hostFile])).code, 1);
  } finally {
    fs.rmSync(hostFile, { force: true });
  }
  assert.equal((await run(sb, ['sh', '-c', 'echo mine > /tmp/private && cat /tmp/private'])).stdout, 'mine\n');
  assert.equal(fs.existsSync('/tmp/private'), false);
  const other = await newSandbox(mc);
  assert.equal((await run(other, ['cat', '/tmp/private'])).code, 1);
  assert.equal((await run(other, ['pwd'])).stdout, '/\n');
  // a missing executable: 127 and what a shell says, by name or by path
  assert.deepEqual(await run(sb, ['no-such-command-xyz']),
    { stdout: '', stderr: 'no-such-command-xyz: command not found\n', code: 127 });
  assert.equal((await run(sb, ['/workspace/nope'])).code, 127);
  await sb.terminate();
  await other.terminate();
});

// A Modal image owns /opt, /usr, /etc: each sandbox writes its own copy of
// them (the server's overlays), never the host's or another sandbox's.
test('sandbox view: /opt, /usr and /etc are the sandbox\'s own and writable, workdir /opt/x, kept by a snapshot', async () => {
  const mc = new modal.ModalClient();
  const app = await mc.apps.fromName('mastra', { createIfMissing: true });
  const tag = `sandkit-${process.pid}-${++seq}`;
  const sb = await newSandbox(mc, { workdir: `/opt/${tag}` });
  try {
    assert.deepEqual(await run(sb, ['pwd']), { stdout: `/opt/${tag}\n`, stderr: '', code: 0 });
    assert.equal((await run(sb, ['sh', '-c', 'echo built > out && cat /opt/*/out'])).stdout, 'built\n');
    // unprivileged, the host's own subdirectories (/usr/local) stay read-only
    // to the sandbox (view.mjs); the top levels are its own either way
    const usr = process.getuid() === 0 ? `/usr/local/${tag}` : `/usr/${tag}`;
    for (const dir of [usr, `/etc/${tag}`]) {
      assert.deepEqual(await run(sb, ['sh', '-c', 'pwd; echo x > f; cat f'], { workdir: dir }),
        { stdout: `${dir}\nx\n`, stderr: '', code: 0 });
    }
    assert.equal((await run(sb, ['sh', '-c', `echo conf > /etc/${tag}.conf && rm /etc/hostname`])).code, 0);
    assert.equal((await run(sb, ['test', '-e', '/etc/hostname'])).code, 1);
    // the host's own files are unchanged, and the new paths are not the host's
    for (const p of [`/opt/${tag}`, usr, `/etc/${tag}`, `/etc/${tag}.conf`]) {
      assert.equal(fs.existsSync(p), false, p);
    }
    assert.equal(fs.existsSync('/etc/hostname'), true);
    // nor another sandbox's
    const other = await newSandbox(mc);
    assert.equal((await run(other, ['ls', `/opt/${tag}`])).code, 2);
    assert.equal((await run(other, ['test', '-e', '/etc/hostname'])).code, 0);
    await other.terminate();
    // a snapshot keeps what the sandbox changed there, deletions included
    const snap = await sb.snapshotFilesystem();
    const sb2 = await mc.sandboxes.create(app, snap, { name: uniq('sb') });
    assert.deepEqual(await run(sb2, ['cat', `/opt/${tag}/out`, `/etc/${tag}.conf`]),
      { stdout: 'built\nconf\n', stderr: '', code: 0 });
    assert.equal((await run(sb2, ['test', '-e', '/etc/hostname'])).code, 1);
    await sb2.terminate();
  } finally {
    await sb.terminate();
  }
});

test('sandbox lifetime: entrypoint exit code and timeout', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc, { command: ['sh', '-c', 'exit 7'] });
  assert.equal(await sb.wait(), 7);
  const sb2 = await newSandbox(mc, { timeoutMs: 1000 });
  assert.equal(await sb2.wait(), 124);
  await assert.rejects(run(sb2, ['true']), /has already completed/);
});

test('bad credentials are refused with UNAUTHENTICATED', async () => {
  const mc = new modal.ModalClient({ tokenId: 'ak-test', tokenSecret: 'wrong' });
  await assert.rejects(mc.apps.fromName('mastra', { createIfMissing: true }), /UNAUTHENTICATED/);
});

test('fault: UNAVAILABLE 3 times on SandboxCreate is retried with one idempotency key', async () => {
  const mc = new modal.ModalClient();
  await setFaults({ unavailable: { rpc: 'SandboxCreate', count: 3 } });
  const sb = await newSandbox(mc);
  const creates = (await callLog()).filter((e) => e.rpc === 'SandboxCreate');
  assert.deepEqual(creates.map((e) => e.code), [14, 14, 14, 0]);
  assert.deepEqual(creates.map((e) => e.metadata['x-retry-attempt']), ['0', '1', '2', '3']);
  assert.equal(new Set(creates.map((e) => e.metadata['x-idempotency-key'])).size, 1);
  await sb.terminate();
});

test('fault: UNAVAILABLE after the work is done does not create a second sandbox', async () => {
  const mc = new modal.ModalClient();
  await setFaults({ unavailable: { rpc: 'SandboxCreate', count: 1, after: true } });
  const sb = await newSandbox(mc);
  const running = (await admin('GET', '/__admin/sandboxes')).filter((s) => s.running);
  assert.equal(running.length, 1);
  assert.equal(running[0].id, sb.sandboxId);
  await sb.terminate();
});

test('fault: UNAVAILABLE twice on any RPC', async () => {
  const mc = new modal.ModalClient();
  await setFaults({ unavailable: { rpc: '*', count: 2 } });
  const sb = await newSandbox(mc);
  assert.equal((await run(sb, ['echo', 'ok'])).stdout, 'ok\n');
  assert.equal((await callLog()).filter((e) => e.fault === 'unavailable').length, 2);
  await sb.terminate();
});

test('fault: UNAVAILABLE on router TaskExecStart and TaskExecStdioRead', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc);
  await setFaults({ unavailable: [{ rpc: 'TaskExecStart', count: 2 }, { rpc: 'TaskExecStdioRead', count: 2 }] });
  assert.deepEqual(await run(sb, ['sh', '-c', 'echo a; echo b >&2']), { stdout: 'a\n', stderr: 'b\n', code: 0 });
  const log = await callLog();
  assert.deepEqual(log.filter((e) => e.rpc === 'TaskExecStart').map((e) => e.code), [14, 14, 0]);
  assert.equal(log.filter((e) => e.rpc === 'TaskExecStdioRead' && e.code === 14).length, 2);
  await sb.terminate();
});

for (const mode of ['status', 'rst']) {
  test(`fault: stream cut mid-output (${mode}), the SDK resumes from its byte offset`, async () => {
    const mc = new modal.ModalClient();
    const sb = await newSandbox(mc);
    await setFaults({ cut_stream: { after_bytes: 4096, count: 2, mode, fd: 'stdout' } });
    const r = await run(sb, ['seq', '1', '20000']);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 20000);
    assert.equal(lines[19999], '20000');
    const reads = (await callLog()).filter((e) => e.rpc === 'TaskExecStdioRead' && (e.request.file_descriptor ?? 0) === 0);
    assert.deepEqual(reads.map((e) => e.request.offset ?? 0), [0, 4096, 8192]);
    const cuts = reads.filter((e) => e.fault === `cut_stream:${mode}`);
    assert.deepEqual(cuts.map((e) => e.code), mode === 'rst' ? ['rst', 'rst'] : [14, 14]);
    await sb.terminate();
  });
}

test('fault: expired tokens with a short TTL, both token kinds are re-fetched', async () => {
  const mc = new modal.ModalClient();
  await setFaults({ token_ttl_s: 20 });
  const sb = await newSandbox(mc);
  assert.equal((await run(sb, ['echo', 'one'])).stdout, 'one\n');
  await setFaults({ expire_tokens: true }); // every token issued so far is now expired
  assert.equal((await run(sb, ['echo', 'two'])).stdout, 'two\n');
  const log = await callLog();
  const i = log.findIndex((e) => e.rpc === 'TaskExecStart' && e.code === 16);
  assert.ok(i >= 0, 'the router refused the expired JWT');
  assert.ok(log.slice(i).some((e) => e.rpc === 'TaskGetCommandRouterAccess' && e.code === 0), 'router JWT re-fetched');
  assert.ok(log.slice(i).some((e) => e.rpc === 'TaskExecStart' && e.code === 0));
  // With a TTL under the SDK's 300 s refresh window it fetches a token before each call.
  assert.ok(log.filter((e) => e.rpc === 'AuthTokenGet').length >= 3);
  await sb.terminate();
});

test('fault: slow calls, 300 ms delay on SandboxGetTaskId', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc);
  await setFaults({ delay: { rpc: 'SandboxGetTaskId', ms: 300 } });
  const t0 = Date.now();
  assert.equal((await run(sb, ['echo', 'late'])).stdout, 'late\n');
  assert.ok(Date.now() - t0 >= 300);
  assert.equal((await callLog()).find((e) => e.rpc === 'SandboxGetTaskId').fault, 'delay');
  await sb.terminate();
});

test('fault: expired auth token with a long TTL is NOT transparent, the SDK trusts `exp`', async () => {
  const mc = new modal.ModalClient();
  await mc.apps.fromName('mastra', { createIfMissing: true });
  await setFaults({ expire_tokens: true });
  await assert.rejects(mc.apps.fromName('mastra', { createIfMissing: true }), /UNAUTHENTICATED/);
  // A new client fetches a fresh token and works.
  await new modal.ModalClient().apps.fromName('mastra', { createIfMissing: true });
});

test('sandbox.open(): write, read back, append, r+ in place, errors', async () => {
  const mc = new modal.ModalClient();
  const sb = await newSandbox(mc, { workdir: '/work' });
  try {
    const bytes = new Uint8Array(3 * 1024 * 1024 + 7);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
    let f = await sb.open('/work/data.bin', 'w');
    await f.write(bytes.subarray(0, 1000));
    await f.write(bytes.subarray(1000));
    await f.flush();
    await f.close();
    // the file is the sandbox's own: its commands see it
    const p = await sb.exec(['sh', '-c', 'wc -c < /work/data.bin']);
    assert.equal((await p.stdout.readText()).trim(), String(bytes.length));

    f = await sb.open('data.bin', 'r'); // relative: from the working directory
    const back = await f.read();
    await f.close();
    assert.equal(back.length, bytes.length);
    assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'read back differs');

    f = await sb.open('/work/data.bin', 'a');
    await f.write(new TextEncoder().encode('tail'));
    await f.close();
    f = await sb.open('/work/data.bin', 'r+');
    await f.write(new TextEncoder().encode('HEAD'));
    await f.close();
    const q = await sb.exec(['sh', '-c', 'head -c 4 /work/data.bin; tail -c 4 /work/data.bin']);
    assert.equal(await q.stdout.readText(), 'HEADtail');

    await assert.rejects(sb.open('/work/missing.txt', 'r'), (e) => {
      assert.equal(e.name, 'SandboxFilesystemError');
      assert.match(e.message, /No such file or directory/);
      return true;
    });
    await assert.rejects(sb.open('/work', 'r'), /Is a directory/);
    await assert.rejects(sb.open('/no/such/dir/x', 'w'), /No such file or directory/);
    // a symlink means what it means inside the sandbox: not the host's file
    fs.writeFileSync('/tmp/sandkit-modal-open-host.txt', 'host secret');
    try {
      await (await sb.exec(['ln', '-s', '/tmp/sandkit-modal-open-host.txt', '/work/link'])).wait();
      await assert.rejects(sb.open('/work/link', 'r'), /No such file or directory/);
    } finally {
      fs.rmSync('/tmp/sandkit-modal-open-host.txt', { force: true });
    }
    const log = await callLog();
    assert.ok(log.some((e) => e.rpc === 'ContainerFilesystemExec'), 'ContainerFilesystemExec was called');
    assert.ok(log.some((e) => e.rpc === 'ContainerFilesystemExecGetOutput'), 'GetOutput was called');
  } finally {
    await sb.terminate();
  }
});
