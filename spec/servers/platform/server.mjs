#!/usr/bin/env node
// Mastra Platform reference server (loopback only). Prints `LISTENING <port>`
// once ready; exits on SIGTERM/SIGINT and when stdin reaches EOF.
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { App } from './lib/app.mjs';
import { FaultError, normalizeFaults, shorthandToFaults } from './lib/faults.mjs';
import { killAll } from './lib/runner.mjs';

const VALUE_FLAGS = new Set([
  'port', 'token', 'state-dir', 'project-id', 'faults', 'tls-cert', 'tls-key',
  'close-before-exit', 'close-code', 'close-reason', 'lease-410', 'create-5xx', 'html-502',
  'html-502-route', 'malformed-json', 'malformed-json-route', 'delay-ms', 'delay-route',
  'expired-lease', 'lease-ttl-ms', 'exit-close-grace-ms', 'idle-ms-per-minute',
]);
const BOOL_FLAGS = new Set(['quiet', 'help']);

function usage() {
  return 'usage: node server.mjs [--port N] [--token T] [--state-dir DIR] [--project-id P] [--faults JSON]\n' +
    '       [--close-before-exit once|always|N] [--close-code C] [--close-reason R] [--lease-410 once|always|N]\n' +
    '       [--create-5xx N[:STATUS]] [--html-502 once|always|N] [--html-502-route R] [--malformed-json once|always|N]\n' +
    '       [--malformed-json-route R] [--delay-ms MS] [--delay-route R] [--expired-lease once|always|N]\n' +
    '       [--lease-ttl-ms MS] [--exit-close-grace-ms MS] [--idle-ms-per-minute MS] [--tls-cert F --tls-key F] [--quiet]\n' +
    'See README.md.\n';
}

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    let name = a.slice(2);
    let value;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (BOOL_FLAGS.has(name)) {
      opts[name] = true;
      continue;
    }
    if (!VALUE_FLAGS.has(name)) throw new Error(`unknown flag --${name}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new Error(`--${name} needs a value`);
      value = argv[++i];
    }
    opts[name] = value;
  }
  return opts;
}

function buildFaults(opts) {
  let doc = {};
  if (opts.faults !== undefined) {
    try {
      doc = JSON.parse(opts.faults);
    } catch {
      throw new FaultError('--faults is not valid JSON');
    }
  }
  const extra = shorthandToFaults(opts);
  const merged = { ...doc, ...extra, http: [...(doc.http ?? []), ...(extra.http ?? [])], ws: [...(doc.ws ?? []), ...(extra.ws ?? [])] };
  normalizeFaults(merged); // validate now so a bad flag fails at start
  return merged;
}

function main() {
  let opts;
  let startFaults;
  try {
    opts = parseArgs(process.argv.slice(2));
    if (opts.help) {
      process.stdout.write(usage());
      process.exit(0);
    }
    startFaults = buildFaults(opts);
  } catch (e) {
    process.stderr.write(`[platform] ${e.message}\n${usage()}`);
    process.exit(2);
  }
  const ownStateDir = opts['state-dir'] === undefined;
  const stateDir = ownStateDir ? mkdtempSync(path.join(os.tmpdir(), 'sandkit-platform-')) : path.resolve(opts['state-dir']);
  mkdirSync(stateDir, { recursive: true });
  const tls = opts['tls-cert'] !== undefined || opts['tls-key'] !== undefined;
  const app = new App({
    token: opts.token ?? 'test-token',
    stateDir,
    startFaults,
    projectId: opts['project-id'],
    quiet: opts.quiet === true,
    scheme: tls ? 'https' : 'http',
  });
  const onRequest = (req, res) => {
    app.handle(req, res).catch((e) => {
      app.info(`unhandled: ${e.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Internal server error', type: 'internal_error' } }));
    });
  };
  const server = tls
    ? https.createServer({ cert: readFileSync(opts['tls-cert']), key: readFileSync(opts['tls-key']) }, onRequest)
    : http.createServer(onRequest);
  server.on('upgrade', (req, socket, head) => {
    app.gateway.handleUpgrade(req, socket, head).catch((e) => {
      app.info(`upgrade failed: ${e.stack ?? e}`);
      socket.destroy();
    });
  });
  server.on('clientError', (err, socket) => socket.destroy());

  let stopping = false;
  const stop = (why) => {
    if (stopping) return;
    stopping = true;
    app.info(`stopping (${why})`);
    killAll();
    app.gateway.closeAll();
    server.close();
    server.closeAllConnections();
    if (ownStateDir) rmSync(stateDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.stdin.on('end', () => stop('stdin EOF'));
  process.stdin.on('error', () => stop('stdin error'));
  process.stdin.resume();

  const port = opts.port === undefined ? 0 : Number(opts.port);
  // backlog: bench/scale.lua opens 1,000 WebSockets at once (node's default is 511)
  server.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => {
    app.port = server.address().port;
    process.stdout.write(`LISTENING ${app.port}\n`);
    app.info(`state dir ${stateDir}; exec endpoint ${app.wsEndpoint()}`);
  });
}

main();
