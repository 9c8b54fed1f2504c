// Server state: sandboxes (each a working directory), id-keyed checkpoints,
// templates, lease counters and bucket objects. Everything here is reset by
// POST /__admin/reset.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import path from 'node:path';
import { killGroup } from './runner.mjs';

const hex = (n) => randomBytes(n).toString('hex');
const keyHash = (s) => createHash('sha256').update(s).digest('hex').slice(0, 16);

export class Store {
  constructor(stateDir) {
    this.stateDir = stateDir;
    this.sandboxDir = path.join(stateDir, 'sandboxes');
    this.checkpointDir = path.join(stateDir, 'checkpoints');
    this.reset();
  }

  reset() {
    for (const sb of this.sandboxes?.values() ?? []) this.#dropRuntime(sb);
    rmSync(this.sandboxDir, { recursive: true, force: true });
    rmSync(this.checkpointDir, { recursive: true, force: true });
    mkdirSync(this.sandboxDir, { recursive: true });
    mkdirSync(this.checkpointDir, { recursive: true });
    this.sandboxes = new Map(); // platform id → sandbox
    this.checkpoints = new Map(); // recovery key → { name, dir, sandboxId, createdAt, seq }
    this.inflightCaptures = new Map(); // recovery key → { name, promise }
    this.checkpointSeq = 0;
    this.templates = new Map(); // templateId → { environmentId, definition, polls }
    this.leaseCount = 0;
    this.revokedBefore = 0; // leases with index <= this are revoked
    this.buckets = new Map(); // bucket → Map(key → { body, contentType, lastModified })
  }

  get(projectId, id) {
    const sb = this.sandboxes.get(id);
    return sb && sb.projectId === projectId ? sb : undefined;
  }

  // body: validated create body. Restores the latest checkpoint of `id`, else
  // the seed checkpoint, else boots empty.
  async create(projectId, body, meta) {
    const id = `sbx_${hex(8)}`;
    const dir = path.join(this.sandboxDir, id);
    let restoredFrom = null;
    const ck = (body.id !== undefined ? this.checkpoints.get(body.id) : undefined) ??
      (body.seedCheckpointName !== undefined ? this.findCheckpointByName(body.seedCheckpointName) : undefined);
    if (ck) {
      await cp(ck.dir, dir, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
      restoredFrom = ck.name;
    } else {
      mkdirSync(dir, { recursive: true });
    }
    const sb = {
      id,
      projectId,
      providerResourceId: `rw_sb_${hex(6)}`,
      status: 'ready',
      createdAt: new Date().toISOString(),
      destroyedAt: null,
      recoveryKey: body.id,
      environmentId: body.environmentId,
      env: body.env ?? {},
      idleTimeoutMinutes: body.idleTimeoutMinutes,
      networkIsolation: body.networkIsolation ?? 'ISOLATED',
      templateDefinition: body.templateDefinition,
      seedCheckpointName: body.seedCheckpointName,
      actingUserId: meta.actingUserId,
      restoredFrom,
      dir,
      procs: new Set(),
      pgids: new Set(),
      sockets: new Set(),
      idleTimer: null,
    };
    this.sandboxes.set(id, sb);
    return sb;
  }

  findCheckpointByName(name) {
    for (const ck of this.checkpoints.values()) if (ck.name === name) return ck;
    return this.checkpoints.get(name);
  }

  static view(sb) {
    return {
      id: sb.id,
      providerResourceId: sb.providerResourceId,
      status: sb.status,
      createdAt: sb.createdAt,
      destroyedAt: sb.destroyedAt,
      instanceUrl: null,
    };
  }

  #dropRuntime(sb) {
    if (sb.idleTimer) clearTimeout(sb.idleTimer);
    sb.idleTimer = null;
    for (const p of sb.procs) p.kill();
    sb.procs.clear();
    for (const g of sb.pgids) killGroup(g);
    sb.pgids.clear();
  }

  // Platform-side teardown: processes die, sockets drop (1006, as when a VM
  // goes away), the record stays with destroyedAt set.
  async destroy(sb, { checkpoint = false } = {}) {
    if (sb.destroyedAt) return;
    sb.status = 'destroyed';
    sb.destroyedAt = new Date().toISOString();
    this.#dropRuntime(sb);
    for (const ws of sb.sockets) ws.terminate();
    sb.sockets.clear();
    if (checkpoint && sb.recoveryKey !== undefined) await this.capture(sb, sb.recoveryKey);
    await rm(sb.dir, { recursive: true, force: true });
  }

  // Returns { checkpointName, status: 'captured' | 'coalesced' }.
  async capture(sb, key) {
    const inflight = this.inflightCaptures.get(key);
    if (inflight) {
      await inflight.promise;
      return { checkpointName: inflight.name, status: 'coalesced' };
    }
    const seq = ++this.checkpointSeq;
    const name = `ckpt_${keyHash(key)}_${seq}`;
    const dir = path.join(this.checkpointDir, `${keyHash(key)}-${seq}`);
    const promise = (async () => {
      await cp(sb.dir, dir, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
      const old = this.checkpoints.get(key);
      this.checkpoints.set(key, { name, dir, sandboxId: sb.id, createdAt: new Date().toISOString(), seq });
      if (old) await rm(old.dir, { recursive: true, force: true });
    })();
    this.inflightCaptures.set(key, { name, promise });
    try {
      await promise;
    } finally {
      this.inflightCaptures.delete(key);
    }
    return { checkpointName: name, status: 'captured' };
  }

  async deleteCheckpoint(key) {
    const ck = this.checkpoints.get(key);
    if (!ck) return false;
    this.checkpoints.delete(key);
    await rm(ck.dir, { recursive: true, force: true });
    return true;
  }

  // Idle GC: the platform may destroy a sandbox idle for idleTimeoutMinutes.
  touch(sb, msPerMinute) {
    if (sb.destroyedAt || sb.idleTimeoutMinutes === undefined) return;
    if (sb.idleTimer) clearTimeout(sb.idleTimer);
    const ms = sb.idleTimeoutMinutes * msPerMinute;
    const fire = () => {
      sb.idleTimer = null;
      if (sb.procs.size > 0 || sb.sockets.size > 0) {
        sb.idleTimer = setTimeout(fire, ms);
        sb.idleTimer.unref();
        return;
      }
      this.destroy(sb).catch(() => {});
    };
    sb.idleTimer = setTimeout(fire, ms);
    sb.idleTimer.unref();
  }

  bucket(name) {
    let b = this.buckets.get(name);
    if (!b) {
      b = new Map();
      this.buckets.set(name, b);
    }
    return b;
  }

  describe() {
    return {
      sandboxes: [...this.sandboxes.values()].map((sb) => ({
        ...Store.view(sb),
        projectId: sb.projectId,
        recoveryKey: sb.recoveryKey ?? null,
        environmentId: sb.environmentId,
        env: sb.env,
        idleTimeoutMinutes: sb.idleTimeoutMinutes ?? null,
        networkIsolation: sb.networkIsolation,
        templateDefinition: sb.templateDefinition ?? null,
        seedCheckpointName: sb.seedCheckpointName ?? null,
        actingUserId: sb.actingUserId ?? null,
        restoredFrom: sb.restoredFrom,
        dir: sb.dir,
        runningProcesses: sb.procs.size,
        openSockets: sb.sockets.size,
      })),
      checkpoints: [...this.checkpoints.entries()].map(([key, ck]) => ({ key, name: ck.name, sandboxId: ck.sandboxId, createdAt: ck.createdAt })),
      templates: [...this.templates.entries()].map(([templateId, t]) => ({ templateId, environmentId: t.environmentId, status: t.status })),
      leaseCount: this.leaseCount,
      buckets: Object.fromEntries([...this.buckets.entries()].map(([b, m]) => [b, [...m.keys()].sort()])),
    };
  }
}
