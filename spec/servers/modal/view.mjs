// What a sandbox process sees: its own root, as a Modal sandbox has its own
// container filesystem. The sandbox's directory <fs> is the root, and the
// paths a Modal image owns are the sandbox's too, writable: the host's
// system directories (/usr, /etc, /opt, ...) are the lower layers of an
// overlay per directory whose upper layer is <fs>/usr, <fs>/etc, ... So
// `workdir = "/opt/x"` works, writing under /usr/local or /etc changes this
// sandbox alone (never the host, never another sandbox), /tmp, /workspace or
// /app are plain directories of <fs>, and <fs> on disk holds exactly what the
// sandbox changed (snapshots copy it). `pwd` shows the path the client asked
// for; nothing of the host's /tmp, /root or /home is visible.
//
// The overlays live in a mount namespace kept by one small process per
// sandbox (the keeper: unshare(1), mount(8) once with every mount in a
// generated fstab, then it waits on its stdin). Every process of the sandbox
// enters that namespace with nsenter(1), so all of them share one overlay
// per directory (two overlays on one upper layer would disagree), and the
// namespace, with its mounts, goes away with the keeper and the sandbox's
// last process. Two launchers then build the view (--isolation):
//   bwrap  bubblewrap: --bind <fs> / (the overlays come along), its own
//          /dev and /proc.
//   none   chroot into <fs>, where the keeper also bound the host's /dev and
//          /proc. No PID, network or IPC isolation: a view, not a sandbox.
// Run by a user other than root, the keeper maps that user to root in a
// user namespace (unprivileged overlays need Linux 5.11); the host's own
// directories inside /usr or /etc then stay read-only to the sandbox (their
// owner is not mapped), while their top levels and everything new are its.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

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
const HOST_SHARED = ['dev', 'proc'];
const asRoot = process.getuid?.() === 0;
// nsenter into the keeper's user namespace keeps our uid (mapped to root
// there); setgroups is denied in it, so nsenter must not try to drop groups.
const ENTER_USERNS = asRoot ? [] : ['-U', '--preserve-credentials'];

// Lays out <fs> as a root: the upper layers of the system directories, the
// merged-/usr links, mount points for /dev and /proc, /tmp (1777) and /root.
// Idempotent; a snapshot copy already has them.
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

// An fstab field: mount(8) reads octal escapes for blanks and backslashes.
const fstabField = (s) => s.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);

// Overlay options separate layers with ':' and options with ','.
export function overlaySafe(dir) {
  return /^[^,:\n]+$/.test(dir) ? null : `${dir}: a state directory for overlays may not contain ',' or ':'`;
}

function fstab(mode, sbDir, fsDir) {
  const lines = [];
  for (const [name, s] of SYSTEM) {
    if (!s.dir) continue;
    const work = path.join(sbDir, 'ovl', name);
    fs.mkdirSync(work, { recursive: true });
    const upper = path.join(fsDir, name);
    lines.push(['overlay', fstabField(upper), 'overlay',
      fstabField(`lowerdir=/${name},upperdir=${upper},workdir=${work}`), '0', '0'].join(' '));
  }
  if (mode === 'none') {
    for (const name of HOST_SHARED) lines.push([`/${name}`, fstabField(path.join(fsDir, name)), 'none', 'rbind', '0', '0'].join(' '));
  }
  return lines.join('\n') + '\n';
}

// The keeper waits for the path of its fstab, mounts it, says so, then
// holds the namespace until its stdin closes.
const KEEPER_SCRIPT = 'read -r tab || exit 0; mount -a -T "$tab" || exit 111; echo ready; read _';

function spawnKeeper() {
  const argv = ['unshare', '--mount', '--propagation', 'private', ...(asRoot ? [] : ['--map-root-user']),
    '/bin/sh', '-c', KEEPER_SCRIPT];
  const child = spawn(argv[0], argv.slice(1), { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const err = [];
  child.stderr.on('data', (d) => err.push(d));
  child.stdin.on('error', () => {});
  const lines = readline.createInterface({ input: child.stdout });
  child.mounted = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, sig) => {
      const why = Buffer.concat(err).toString().trim() || `exit ${code ?? sig}`;
      reject(new Error(`the sandbox's overlays could not be mounted: ${why}`));
    });
    lines.once('line', (l) => (l === 'ready' ? resolve() : reject(new Error(`keeper said ${l}`))));
  });
  child.mounted.catch(() => {});
  return child;
}

// One keeper is started ahead, so that creating a sandbox costs only its
// mount(8) (starting unshare and sh takes longer on a loaded machine).
let spare = null;

// Starts the keeper of a sandbox whose directory is sbDir and root fsDir
// (laid out by prepareRoot). Resolves { pid, fsDir, child } once its
// overlays are mounted; rejects with mount's own words otherwise. The keeper
// ends when its stdin closes (stopView, or this server's exit).
export async function startView(mode, sbDir, fsDir) {
  const tab = path.join(sbDir, 'fstab');
  fs.writeFileSync(tab, fstab(mode, sbDir, fsDir));
  let child = spare;
  if (!child || child.exitCode !== null || child.signalCode !== null) child = spawnKeeper();
  spare = spawnKeeper();
  child.stdin.write(`${tab}\n`);
  await child.mounted;
  return { pid: child.pid, fsDir, child };
}

// Ends the keeper started ahead (at this server's exit).
export function stopSpare() {
  stopView({ child: spare });
  spare = null;
}

// Ends a view's keeper (its namespace goes with the sandbox's last process).
export function stopView(view) {
  const c = view?.child;
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  c.stdin.end();
  try { process.kill(-c.pid, 'SIGKILL'); } catch { /* gone */ }
}

// Unprivileged, an overlay's work directory is left mode 000 and would stop
// the removal of the sandbox directory sbDir.
export function unlockOverlayWork(sbDir) {
  if (asRoot) return;
  let names = [];
  try { names = fs.readdirSync(path.join(sbDir, 'ovl')); } catch { /* no overlays */ }
  for (const name of names) {
    try { fs.chmodSync(path.join(sbDir, 'ovl', name, 'work'), 0o700); } catch { /* none */ }
  }
}

export function removeSandboxDir(sbDir, cb) {
  unlockOverlayWork(sbDir);
  fs.rm(sbDir, { recursive: true, force: true }, cb);
}

// The path, in this process, of an absolute path as the view shows it: the
// keeper's mount namespace seen through /proc/<keeper>/root, so the overlays
// are merged. Read only (a symlink of the sandbox's is followed as the host
// would follow it).
function viewPath(view, p) {
  const rel = path.posix.normalize(p).replace(/^\/+/, '');
  if (HOST_SHARED.includes(rel.split('/')[0])) return `/${rel}`;
  return path.join(`/proc/${view.pid}/root`, view.fsDir, rel);
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
export function findExecutable(view, cwd, cmd, pathVar) {
  if (cmd.includes('/')) return executable(viewPath(view, path.posix.resolve(cwd, cmd)));
  for (const dir of (pathVar || '/usr/bin:/bin').split(':')) {
    if (dir && path.posix.isAbsolute(dir) && executable(viewPath(view, path.posix.join(dir, cmd)))) return true;
  }
  return false;
}

// Inside the view: the working directory is created when missing, as Modal
// does (by the sandbox's own mkdir, so through its overlays), then the
// command replaces the shell.
const ENTER_CWD = '[ -d "$1" ] || mkdir -p -- "$1" 2>/dev/null; cd "$1" || exit 1; shift; exec "$@"';

// The argv to spawn (with cwd '/') so that `argv` runs in the view at cwd.
export function launchArgv(mode, view, cwd, argv) {
  const enter = ['nsenter', '-t', String(view.pid), '-m', ...ENTER_USERNS, '--'];
  const inner = ['/bin/sh', '-c', ENTER_CWD, 'sh', cwd, ...argv];
  if (mode === 'bwrap') {
    return [...enter, 'bwrap', '--bind', view.fsDir, '/', '--dev', '/dev', '--proc', '/proc',
      '--die-with-parent', '--chdir', '/', '--', ...inner];
  }
  return [...enter, 'chroot', view.fsDir, ...inner];
}

// null when the launcher works here (a view whose /opt takes a new
// directory, twice, with the host's /opt untouched), else why not.
export async function checkLauncher(mode, scratchDir) {
  const sbDir = path.join(scratchDir, 'view-check');
  const fsDir = path.join(sbDir, 'fs');
  const probe = `/opt/sandkit-view-check-${process.pid}`;
  let why = overlaySafe(scratchDir);
  let view = null;
  try {
    if (!why) {
      prepareRoot(fsDir);
      view = await startView(mode, sbDir, fsDir);
      for (let i = 0; i < 2 && !why; i++) { // twice: reusable
        const argv = launchArgv(mode, view, probe, ['/bin/sh', '-c', 'pwd']);
        const r = spawnSync(argv[0], argv.slice(1), { cwd: '/', encoding: 'utf8', timeout: 20000 });
        if (r.status !== 0 || r.stdout !== `${probe}\n`) why = (r.error?.message ?? r.stderr ?? '').trim() || `exit ${r.status}`;
      }
      if (!why && fs.existsSync(probe)) why = `${probe} appeared on the host`;
    }
  } catch (e) {
    why = e.message;
  }
  stopView(view);
  await new Promise((r) => removeSandboxDir(sbDir, r));
  if (!why) return null;
  return `${mode === 'bwrap' ? 'bubblewrap on' : 'chroot into'} the sandbox's overlays cannot build its view ` +
    `(unshare(1) and mount(8) need root, or unprivileged user namespaces on Linux 5.11 or later; the state ` +
    `directory a filesystem that takes overlay upper layers, e.g. ext4 or tmpfs, not overlayfs): ${why}`;
}
