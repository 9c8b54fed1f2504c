// Loopback test server for the C core's transports (docs/protocols/event-core.md §10).
// Plain port: HTTP/1.1 + ws + h2c (prior knowledge, sniffed from the preface).
// TLS port: HTTPS (h2 via ALPN, or HTTP/1.1) + wss, self-signed cert made at
// startup with openssl in a temp dir. See README.md for routes and faults.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { WebSocketServer } from 'ws';

const args = process.argv.slice(2);
function flag(name, dflt) {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = args[i + 1];
  return v === undefined || v.startsWith('--') ? true : v;
}

const faults = {
  delayMs: Number(flag('delay-ms', 0)),      // delay before every non-admin HTTP response
  wsReject: Number(flag('ws-reject', 0)),    // reject every upgrade with this status
  wsDeaf: Boolean(flag('ws-deaf', false)),   // stop reading after open (ignore client close)
  h2MaxStreams: null,                        // SETTINGS_MAX_CONCURRENT_STREAMS of new h2c sessions
};
let log = [];
let lastOfferedProtocols = null;
// h2Open: h2 sessions open right now (never reset; HTTP/1.1 ones close on
// their own after an idle while, these do not). h2PeakStreams: the most
// streams one TLS session had open at once (since the last reset).
const stats = {
  connections: { plain: 0, tls: 0 }, h2Sessions: { plain: 0, tls: 0 }, h2Open: { tls: 0 }, h2PeakStreams: { tls: 0 },
};
const sockets = new Set();

function note(entry) {
  log.push({ t: Date.now(), ...entry });
  if (log.length > 10000) log.shift();
}

// --- certificate --------------------------------------------------------
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandkit-echo-'));
const keyFile = path.join(dir, 'key.pem');
const certFile = path.join(dir, 'cert.pem');
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
  '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=localhost',
  '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
// the client's, for the port that requires one (self-signed: its own CA)
const clientKeyFile = path.join(dir, 'client-key.pem');
const clientCertFile = path.join(dir, 'client.pem');
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
  '-nodes', '-keyout', clientKeyFile, '-out', clientCertFile, '-days', '2', '-subj', '/CN=sandkit-client'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
const unixPath = path.join(dir, 'echo.sock');

// --- HTTP routes (shared by HTTP/1.1, h2c and h2 over TLS) ---------------
function sendJson(res, status, obj, extra = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(Buffer.concat(chunks)));
  });
}

// One timer per request at a time, cancelled when the client goes away.
function pace(ms, req, fn) {
  if (!req.paceTimer) req.on('close', () => clearTimeout(req.paceTimer));
  req.paceTimer = setTimeout(fn, ms);
}

async function admin(req, res, url) {
  const route = url.pathname.slice('/__admin/'.length);
  if (route === 'log') return sendJson(res, 200, log);
  if (route === 'info') {
    return sendJson(res, 200, { port: plainPort, tlsPort, caFile: certFile, dir });
  }
  if (route === 'stats') return sendJson(res, 200, stats);
  if (route === 'reset' && req.method === 'POST') {
    log = [];
    lastOfferedProtocols = null;
    stats.connections = { plain: 0, tls: 0 };
    stats.h2Sessions = { plain: 0, tls: 0 };
    stats.h2PeakStreams = { tls: 0 };
    faults.delayMs = 0; faults.wsReject = 0; faults.wsDeaf = false; faults.h2MaxStreams = null;
    return sendJson(res, 200, { ok: true });
  }
  // Closes every h2c connection, as a server restarting would.
  if (route === 'drop-h2c' && req.method === 'POST') {
    const n = h2cSessions.size;
    for (const sess of h2cSessions) sess.destroy();
    return sendJson(res, 200, { dropped: n });
  }
  if (route === 'faults' && req.method === 'POST') {
    let body = {};
    try { body = JSON.parse((await readBody(req)).toString() || '{}'); } catch { return sendJson(res, 400, { error: 'bad json' }); }
    for (const k of Object.keys(faults)) if (k in body) faults[k] = body[k];
    return sendJson(res, 200, faults);
  }
  return sendJson(res, 404, { error: { message: 'no such admin route', type: 'not_found' } });
}

async function route(req, res, url, body) {
  // a PlatformFilesystem bucket route answers as its key's route (its
  // transport's tests: spec/fs_platform_spec.lua)
  const p = url.pathname.replace(/^\/v1\/railway\/projects\/[^/]+\/fs\/[^/]+(?=\/)/, '');
  const q = url.searchParams;
  if (p === '/hello') return sendJson(res, 200, { hello: 'world', lastOfferedProtocols });
  if (p === '/echo') {
    return sendJson(res, 200, {
      method: req.method, path: p, query: Object.fromEntries(q), headers: req.headers,
      body: body.toString(), httpVersion: req.httpVersion,
    });
  }
  if (p.startsWith('/status/')) {
    const code = Number(p.slice('/status/'.length)) || 500;
    return sendJson(res, code, { error: { message: `status ${code}`, type: 'test_error' } });
  }
  if (p === '/slow') return pace(Number(q.get('ms') || 1000), req, () => sendJson(res, 200, { slow: true }));
  if (p === '/stream') {
    const n = Number(q.get('n') || 3), ms = Number(q.get('ms') || 10);
    res.writeHead(200, { 'content-type': 'text/plain' });
    let i = 0;
    const tick = () => {
      if (i === n) return res.end();
      res.write(`chunk ${i++}\n`);
      pace(ms, req, tick);
    };
    return tick();
  }
  if (p === '/big') {
    const n = Number(q.get('bytes') || 1 << 20);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': n });
    return res.end(Buffer.alloc(n, 0x61));
  }
  if (p === '/headers') {
    // many response headers (a client must bound its header block)
    const n = Number(q.get('n') || 100);
    const headers = { 'content-type': 'text/plain' };
    for (let i = 0; i < n; i++) headers[`x-filler-${i}`] = 'y'.repeat(200);
    res.writeHead(200, headers);
    return res.end('ok');
  }
  if (p === '/chunked') {
    // a body of `bytes` sent chunked: no content-length to judge it by
    const n = Number(q.get('bytes') || 1 << 20);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const piece = Buffer.alloc(64 * 1024, 0x62);
    let sent = 0;
    const more = () => {
      while (sent < n && !res.destroyed) {
        const k = Math.min(piece.length, n - sent);
        sent += k;
        if (!res.write(k === piece.length ? piece : piece.subarray(0, k))) return res.once('drain', more);
      }
      return res.end();
    };
    return more();
  }
  if (p.startsWith('/grpc/')) return grpc(req, res, p.slice('/grpc/'.length), q, body);
  if (p.startsWith('/h2fault/') && req.httpVersionMajor === 2) return h2fault(req, res, p.slice('/h2fault/'.length), q);
  return sendJson(res, 404, { error: { message: 'not found', type: 'not_found' } });
}

// gRPC-shaped responses: content-type application/grpc, body, then trailers.
function grpc(req, res, name, q, body) {
  const h2 = req.httpVersionMajor === 2;
  if (name === 'trailers-only') {
    // ?pad=N: a grpc-message of N bytes (a header block larger than a small receive buffer)
    const message = q.get('pad') ? 'x'.repeat(Math.min(Number(q.get('pad')), 65536)) : 'not%20found';
    const headers = { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': message };
    if (h2) return req.stream.respond(headers, { endStream: true });
    delete headers[':status'];
    res.writeHead(200, headers);
    return res.end();
  }
  const trailers = { 'grpc-status': '0', 'grpc-message': 'ok' };
  if (!h2) {
    // HTTP/1.1 trailers need chunked encoding and a Trailer declaration.
    res.writeHead(200, { 'content-type': 'application/grpc', trailer: 'grpc-status, grpc-message' });
  } else {
    res.writeHead(200, { 'content-type': 'application/grpc' });
  }
  if (name === 'echo') {
    res.write(body);
    res.addTrailers(trailers);
    return res.end();
  }
  if (name === 'no-status') {
    // the message echoed, then the end of the stream without trailers (what
    // libcurl 7.88 makes of trailers it drops, docs/reliability.md §"Lost trailers")
    res.write(body);
    return res.end();
  }
  if (name === 'stream') {
    const n = Number(q.get('n') || 3), ms = Number(q.get('ms') || 10);
    let i = 0;
    const tick = () => {
      if (i === n) { res.addTrailers(trailers); return res.end(); }
      const msg = Buffer.from(`message ${i++}`);
      const frame = Buffer.alloc(5 + msg.length);
      frame.writeUInt32BE(msg.length, 1);
      msg.copy(frame, 5);
      res.write(frame);
      pace(ms, req, tick);
    };
    return tick();
  }
  res.addTrailers({ 'grpc-status': '12', 'grpc-message': 'unimplemented' });
  return res.end();
}

// HTTP/2 faults, after the request body was read whole (it is in the log).
function h2fault(req, res, name, q) {
  const sess = req.stream.session;
  if (name === 'goaway') {
    // GOAWAY naming this stream the last one processed; streams the client
    // opened after it are refused (and must be retried elsewhere).
    sess.goaway(http2.constants.NGHTTP2_NO_ERROR, req.stream.id);
    return pace(Number(q.get('ms') || 0), req, () => sendJson(res, 200, { goaway: req.stream.id }));
  }
  if (name === 'rst') return req.stream.close(Number(q.get('code') || http2.constants.NGHTTP2_INTERNAL_ERROR));
  if (name === 'die') {
    // The connection dies under every stream on it: TCP RST or FIN.
    if (q.get('how') === 'fin') return sess.destroy();
    return sess.socket.resetAndDestroy();
  }
  return sendJson(res, 404, { error: { message: 'no such fault', type: 'not_found' } });
}

async function onRequest(req, res, port) {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname.startsWith('/__admin/')) return admin(req, res, url);
  const body = await readBody(req);
  note({
    type: 'http', port, method: req.method, path: url.pathname, httpVersion: req.httpVersion,
    bodyLength: body.length, contentType: req.headers['content-type'] ?? null,
  });
  if (faults.delayMs > 0) return pace(faults.delayMs, req, () => route(req, res, url, body));
  return route(req, res, url, body);
}

// --- WebSocket -----------------------------------------------------------
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (set) => (set.has('railway-shell') ? 'railway-shell' : false),
});

function onUpgrade(req, socket, head, port) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const offered = req.headers['sec-websocket-protocol'] ?? null;
  lastOfferedProtocols = offered;
  note({ type: 'ws-upgrade', port, path: url.pathname, offered, authorization: req.headers.authorization ?? null, custom: req.headers['x-sandkit-test'] ?? null });
  const list = (offered ?? '').split(',').map((s) => s.trim());
  const reject = faults.wsReject || (list.includes('railway-shell') ? 0 : 401);
  if (reject) {
    socket.end(`HTTP/1.1 ${reject} Rejected\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => onWs(ws, url, port));
}

function threeFrames(ws, text) {
  ws.send(Buffer.concat([Buffer.from([1]), Buffer.from(text)]));
  ws.send(Buffer.concat([Buffer.from([3]), Buffer.from('err')]));
  ws.send(JSON.stringify({ type: 'exit', data: { exit_code: 0 } }));
}

function onWs(ws, url, port) {
  const p = url.pathname;
  ws.on('close', (code, reason) => note({ type: 'ws-close', port, path: p, code, reason: reason.toString() }));
  ws.on('error', () => {});
  if (faults.wsDeaf || p === '/deaf') {
    // Never read again: the client's CLOSE frame goes unanswered.
    ws._socket.pause();
    return;
  }
  if (p === '/frag') {
    ws.send('hello, ', { fin: false });
    ws.send('fragmented ', { fin: false });
    ws.send('world', { fin: true });
    ws.send(Buffer.from([0, 1, 2]), { binary: true, fin: false });
    ws.send(Buffer.from([3, 4]), { binary: true, fin: true });
    return;
  }
  if (p === '/close') {
    ws.close(Number(url.searchParams.get('code') || 4001), url.searchParams.get('reason') ?? 'bye');
    return;
  }
  if (p === '/flood') {
    const chunk = Buffer.alloc(1024, 0x78);
    // Bounded bursts: a dead peer must not turn this into a busy loop.
    const pump = () => {
      for (let i = 0; i < 16 && ws.readyState === ws.OPEN && ws.bufferedAmount < 64 * 1024; i++) ws.send(chunk);
      if (ws.readyState === ws.OPEN) setTimeout(pump, 1);
    };
    return pump();
  }
  ws.on('message', (data, isBinary) => {
    if (p.startsWith('/echo')) return ws.send(data, { binary: isBinary });
    if (isBinary) return;
    threeFrames(ws, data.toString());
    if (p !== '/bench') ws.close(1000);
  });
}

// --- listeners -----------------------------------------------------------
const h1 = http.createServer((req, res) => onRequest(req, res, 'plain'));
h1.keepAliveTimeout = 60_000;
h1.on('upgrade', (req, socket, head) => onUpgrade(req, socket, head, 'plain'));
const h2c = http2.createServer({}, (req, res) => onRequest(req, res, 'plain'));
const h2cSessions = new Set();
h2c.on('session', (sess) => {
  stats.h2Sessions.plain++;
  h2cSessions.add(sess);
  if (faults.h2MaxStreams !== null) sess.settings({ maxConcurrentStreams: faults.h2MaxStreams });
  sess.on('close', () => h2cSessions.delete(sess));
});

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n');
function onPlainConnection(socket) {
  stats.connections.plain++;
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  // Peek the first bytes: an HTTP/2 preface goes to the h2c server.
  socket.once('readable', () => {
    const first = socket.read();
    if (!first) return socket.destroy();
    socket.unshift(first);
    const isH2 = first.subarray(0, PREFACE.length).equals(PREFACE.subarray(0, Math.min(first.length, PREFACE.length)));
    (isH2 ? h2c : h1).emit('connection', socket);
  });
}
const plain = net.createServer({ pauseOnConnect: true }, onPlainConnection);
// the plain port's service on a unix socket too (a request's unix_socket)
const plainUnix = net.createServer({ pauseOnConnect: true }, onPlainConnection);

// HTTPS that requires a client certificate (a request's client_cert and
// client_key): GET /whoami answers the certificate's common name.
const mtls = https.createServer({
  key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile),
  requestCert: true, rejectUnauthorized: true, ca: [fs.readFileSync(clientCertFile)],
}, (req, res) => sendJson(res, 200, { cn: req.socket.getPeerCertificate().subject.CN }));
mtls.on('tlsClientError', () => {});

const secure = http2.createSecureServer({
  key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile), allowHTTP1: true,
}, (req, res) => onRequest(req, res, 'tls'));
secure.on('upgrade', (req, socket, head) => onUpgrade(req, socket, head, 'tls'));
secure.on('session', (sess) => {
  stats.h2Sessions.tls++;
  stats.h2Open.tls++;
  sess.on('close', () => stats.h2Open.tls--);
  let open = 0;
  sess.on('stream', (stream) => {
    open++;
    stats.h2PeakStreams.tls = Math.max(stats.h2PeakStreams.tls, open);
    stream.on('close', () => open--);
  });
});
secure.on('secureConnection', (socket) => {
  stats.connections.tls++;
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});
secure.on('tlsClientError', () => {});

let plainPort = 0;
let tlsPort = 0;
function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  for (const s of sockets) s.destroy();
  for (const c of wss.clients) c.terminate();
  plain.close();
  plainUnix.close();
  secure.close();
  mtls.close();
  process.exit(0);
}
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();

plainPort = await listen(plain, Number(flag('port', 0)));
tlsPort = await listen(secure, Number(flag('tls-port', 0)));
await new Promise((resolve, reject) => { plainUnix.once('error', reject); plainUnix.listen(unixPath, resolve); });
const mtlsPort = await listen(mtls, 0);
process.stdout.write(`LISTENING ${plainPort}\nTLS ${tlsPort} ${certFile}\nUNIX ${unixPath}\n`
  + `MTLS ${mtlsPort} ${clientCertFile} ${clientKeyFile}\n`);
process.stderr.write(`echo server: plain ${plainPort}, tls ${tlsPort}, ca ${certFile}\n`);
