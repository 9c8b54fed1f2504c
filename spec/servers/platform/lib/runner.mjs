// Runs one command of a sandbox as a local process: `/bin/sh -c <command>` in
// its own process group, with the sandbox's env, output delivered as it arrives.
import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { statSync } from 'node:fs';
import path from 'node:path';

const live = new Set();
// Every process group ever started: background jobs of a command outlive it
// (as on a VM) until their sandbox is destroyed or the server stops. Linux
// does not reuse a pid while it is still some group's id, so killing a
// remembered group can only hit that group (or nothing).
const groups = new Set();

export function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // group already gone
  }
}

export function resolveCwd(sandboxDir, cwd) {
  if (cwd === undefined || cwd === null || cwd === '') return sandboxDir;
  return path.isAbsolute(cwd) ? cwd : path.resolve(sandboxDir, cwd);
}

// Children get PATH and HOME from here, then the sandbox env, then the per-exec
// env; nothing else of the server's environment leaks in.
export function buildEnv(sandbox, execEnv) {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: sandbox.dir,
    ...sandbox.env,
    ...(execEnv ?? {}),
  };
}

function signalNumber(name) {
  return osConstants.signals[name] ?? 0;
}

// handlers: onStdout(buf), onStderr(buf), onExit({exitCode, signal})
// Returns a handle: writeStdin(buf), closeStdin(), signal(name), kill(), pid.
export function runCommand({ command, cwd, env, onStdout, onStderr, onExit }) {
  let done = false;
  const finish = (r) => {
    if (done) return;
    done = true;
    onExit(r);
  };
  let st;
  try {
    st = statSync(cwd);
  } catch {
    st = null;
  }
  if (!st || !st.isDirectory()) {
    // Same text and status as dash when `cd` fails, so a client sees an
    // ordinary failed command rather than a transport error.
    const handle = { pid: null, writeStdin() {}, closeStdin() {}, signal() {}, kill() {}, running: false };
    queueMicrotask(() => {
      onStderr(Buffer.from(`sh: 1: cd: can't cd to ${cwd}\n`));
      finish({ exitCode: 2, signal: null });
    });
    return handle;
  }
  const child = spawn('/bin/sh', ['-c', command], { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const handle = {
    pid: child.pid,
    running: true,
    child,
    writeStdin(buf) {
      if (!child.stdin.destroyed && !child.stdin.writableEnded) child.stdin.write(buf);
    },
    closeStdin() {
      if (!child.stdin.destroyed && !child.stdin.writableEnded) child.stdin.end();
    },
    signal(name) {
      if (!handle.running) return false;
      try {
        process.kill(-child.pid, name);
        return true;
      } catch {
        return false;
      }
    },
    kill() {
      return handle.signal('SIGKILL');
    },
  };
  live.add(handle);
  if (child.pid !== undefined) groups.add(child.pid);
  // A child that exits without reading stdin makes later writes fail with EPIPE.
  child.stdin.on('error', () => {});
  child.stdout.on('data', onStdout);
  child.stderr.on('data', onStderr);
  child.on('error', (err) => {
    live.delete(handle);
    handle.running = false;
    onStderr(Buffer.from(`sh: ${err.message}\n`));
    finish({ exitCode: 127, signal: null });
  });
  child.on('close', (code, sig) => {
    live.delete(handle);
    handle.running = false;
    // The group may still hold background grandchildren; the sandbox owns them
    // until it is destroyed, as on a VM.
    finish({ exitCode: code ?? 128 + signalNumber(sig), signal: sig ?? null });
  });
  return handle;
}

export function killAll() {
  for (const h of live) h.kill();
  for (const g of groups) killGroup(g);
  groups.clear();
}

// For the ws backpressure: pause/resume both output pipes.
export function pauseOutput(handle, paused) {
  if (!handle.child) return;
  for (const s of [handle.child.stdout, handle.child.stderr]) {
    if (paused) s.pause();
    else s.resume();
  }
}
