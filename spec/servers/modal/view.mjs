// What a sandbox process sees: its own root, as a Modal sandbox has its own
// container filesystem. The sandbox's directory <fs> is the root; the host's
// system directories (/usr, /etc, /opt and the /bin, /lib... links of a
// merged-/usr system) are bound read-only on top, with /dev and /proc. So
// /tmp, /workspace, /app or any other path outside those is the sandbox's
// own (it lives in <fs>, is private to the sandbox and goes into
// snapshots), `pwd` shows the path the client asked for, and nothing of the
// host's /tmp, /root or /home is visible.
//
// Two launchers build that view (--isolation):
//   bwrap  bubblewrap: --bind <fs> / plus the read-only binds.
//   none   no bubblewrap: unshare(1) gives the process a private mount
//          namespace (as root, or as an unprivileged user through a user
//          namespace), the same binds are made with mount(8), then chroot.
//          No PID, network or IPC isolation: it is a view, not a sandbox.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const SYSTEM_NAMES = ['usr', 'etc', 'opt', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

// name -> { link: target } (a symlink such as /bin -> usr/bin) or { dir: true }
const SYSTEM = new Map();
for (const name of SYSTEM_NAMES) {
  const p = `/${name}`;
  let st;
  try { st = fs.lstatSync(p); } catch { continue; }
  if (st.isSymbolicLink()) SYSTEM.set(name, { link: fs.readlinkSync(p) });
  else if (st.isDirectory()) SYSTEM.set(name, { dir: true });
}
const HOST_SHARED = new Set(['dev', 'proc']);

// The host path behind an absolute path of the view.
export function hostPath(fsDir, p) {
  const rel = path.posix.normalize(p).replace(/^\/+/, '');
  const [first, ...rest] = rel.split('/');
  const sys = SYSTEM.get(first);
  if (sys?.dir || HOST_SHARED.has(first)) return `/${rel}`;
  if (sys?.link) return path.posix.join(path.posix.resolve('/', sys.link), ...rest);
  return path.join(fsDir, rel);
}

// Creates an absolute directory of the view that is the sandbox's own (the
// system directories are the host's and read-only: left as they are).
export function ensureDir(fsDir, p) {
  const host = hostPath(fsDir, p);
  if (host === fsDir || host.startsWith(fsDir + path.sep)) fs.mkdirSync(host, { recursive: true });
}

// Lays out <fs> as a root: mount points for the host's directories, the
// merged-/usr links, /tmp (1777) and /root. Idempotent; a snapshot copy
// already has them.
export function prepareRoot(fsDir) {
  for (const [name, s] of SYSTEM) {
    const p = path.join(fsDir, name);
    if (s.dir) fs.mkdirSync(p, { recursive: true });
    else if (!fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink()) fs.symlinkSync(s.link, p);
  }
  for (const name of [...HOST_SHARED, 'root']) fs.mkdirSync(path.join(fsDir, name), { recursive: true });
  fs.mkdirSync(path.join(fsDir, 'tmp'), { recursive: true });
  fs.chmodSync(path.join(fsDir, 'tmp'), 0o1777);
}

function executable(file) {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// execvp(3) as the process will see it: whether `cmd` names an executable
// file, searched in PATH unless it contains a slash.
export function findExecutable(fsDir, cwd, cmd, pathVar) {
  if (cmd.includes('/')) return executable(hostPath(fsDir, path.posix.resolve(cwd, cmd)));
  for (const dir of (pathVar || '/usr/bin:/bin').split(':')) {
    if (dir && path.posix.isAbsolute(dir) && executable(hostPath(fsDir, path.posix.join(dir, cmd)))) return true;
  }
  return false;
}

function bwrapArgv(fsDir, cwd, argv) {
  const a = ['bwrap', '--bind', fsDir, '/'];
  for (const [name, s] of SYSTEM) {
    if (s.dir) a.push('--ro-bind', `/${name}`, `/${name}`);
  }
  a.push('--dev', '/dev', '--proc', '/proc', '--die-with-parent', '--chdir', cwd, '--', ...argv);
  return a;
}

// $1 = <fs> (laid out by prepareRoot), $2 = cwd, then the command. Exits 111 when the view cannot be
// built (the server checks the launcher once at start-up).
function unshareScript() {
  const lines = ['fs=$1; cwd=$2; shift 2'];
  for (const [name, s] of SYSTEM) {
    if (!s.dir) continue;
    lines.push(`mount --rbind "/${name}" "$fs/${name}" || exit 111`);
    lines.push(`mount -o remount,bind,ro "$fs/${name}" 2>/dev/null`);
  }
  for (const name of HOST_SHARED) lines.push(`mount --rbind "/${name}" "$fs/${name}" || exit 111`);
  lines.push(`exec chroot "$fs" /bin/sh -c 'cd "$1" || exit 1; shift; exec "$@"' sh "$cwd" "$@"`);
  return lines.join('\n');
}

const UNSHARE_SCRIPT = unshareScript();
const asRoot = process.getuid?.() === 0;

function unshareArgv(fsDir, cwd, argv) {
  return ['unshare', '--mount', '--propagation', 'private', ...(asRoot ? [] : ['--map-root-user']),
    '/bin/sh', '-c', UNSHARE_SCRIPT, 'sh', fsDir, cwd, ...argv];
}

// The argv to spawn (with cwd '/') so that `argv` runs in the view at cwd.
export function launchArgv(mode, fsDir, cwd, argv) {
  return mode === 'bwrap' ? bwrapArgv(fsDir, cwd, argv) : unshareArgv(fsDir, cwd, argv);
}

// null when the launcher works here, else why not.
export function checkLauncher(mode, scratchDir) {
  const fsDir = path.join(scratchDir, 'view-check');
  prepareRoot(fsDir);
  const argv = launchArgv(mode, fsDir, '/tmp', ['/bin/sh', '-c', 'pwd']);
  let r = spawnSync(argv[0], argv.slice(1), { cwd: '/', encoding: 'utf8', timeout: 20000 });
  if (r.status === 0) r = spawnSync(argv[0], argv.slice(1), { cwd: '/', encoding: 'utf8', timeout: 20000 }); // twice: reusable
  fs.rmSync(fsDir, { recursive: true, force: true });
  if (r.status === 0 && r.stdout === '/tmp\n') return null;
  const why = (r.error?.message ?? r.stderr ?? '').trim() || `exit ${r.status}`;
  return mode === 'bwrap'
    ? `bubblewrap cannot build the sandbox view: ${why}`
    : `unshare(1) cannot build the sandbox view (needs root or unprivileged user namespaces): ${why}`;
}
