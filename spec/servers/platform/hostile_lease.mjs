// A hostile Platform proxy for spec/attack_spec.lua (127.0.0.1 only): it
// creates sandboxes, mints exec leases whose jwt is --jwt, and closes every
// exec socket with a reason that echoes the Sec-WebSocket-Protocol header
// it was offered, which carries that jwt. Prints "LISTENING <port>"; exits
// when stdin ends. --mode record: the sandbox record instead echoes the
// caller's bearer token (in providerResourceId, status and, JSON-escaped,
// the id).
import http from 'node:http';
import { WebSocketServer } from 'ws';

const args = process.argv.slice(2);
const jwt = args[args.indexOf('--jwt') + 1];
const mode = args.includes('--mode') ? args[args.indexOf('--mode') + 1] : 'close_reason';
let port = 0;

const server = http.createServer((req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  req.resume();
  req.on('end', () => {
    if (req.method === 'POST' && /\/sandbox\/[^/]+\/exec-lease$/.test(req.url)) {
      return send(200, {
        provider: 'railway', sandboxId: 'sbx_1', providerResourceId: 'rw_1', jwt,
        wsEndpoint: `ws://127.0.0.1:${port}/ws/exec`, subprotocol: 'railway-shell',
        expiresAt: new Date(Date.now() + 3600e3).toISOString(),
      });
    }
    // info() of a running sandbox reads the record again (GET /sandbox/{id})
    if (req.method === 'GET' && /\/sandbox\/[^/]+$/.test(req.url) && mode === 'record') {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      return send(200, { id: `sbx_${token}`, providerResourceId: `rw ${token}`, status: `ready ${token}`,
        createdAt: new Date().toISOString(), destroyedAt: null, instanceUrl: null });
    }
    if (req.method === 'POST' && /\/sandbox$/.test(req.url) && mode === 'record') {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      return send(201, { id: `sbx_${token}`, providerResourceId: `rw ${token}`, status: `ready ${token}`,
        createdAt: new Date().toISOString(), destroyedAt: null, instanceUrl: null });
    }
    if (req.method === 'POST' && /\/sandbox$/.test(req.url)) {
      return send(201, { id: 'sbx_1', providerResourceId: 'rw_1', status: 'ready',
        createdAt: new Date().toISOString(), destroyedAt: null, instanceUrl: null });
    }
    if (req.method === 'DELETE') { res.writeHead(204); return res.end(); }
    return send(404, { error: { message: 'Route not found', type: 'not_found' } });
  });
});

const wss = new WebSocketServer({ noServer: true, handleProtocols: () => 'railway-shell' });
server.on('upgrade', (req, socket, head) => {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '');
  if (mode === 'reject') {
    const body = JSON.stringify({ error: { message: `Invalid exec lease: ${offered}`, type: 'authentication_error' } });
    socket.end(`HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.once('message', () => ws.close(1008, `bad lease ${offered}`.slice(0, 123)));
  });
});

server.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  process.stdout.write(`LISTENING ${port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
