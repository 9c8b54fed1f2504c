// A fake Docker daemon on a unix socket for DockerSandbox's fault specs
// (spec/docker_offline_spec.lua, spec/fs_docker_archive_spec.lua): just enough of the Engine API for a sandbox to
// start and exec, then one way of misbehaving, chosen by the second
// argument:
//   hang            accept connections, never answer
//   hang_exec       answer everything but the exec start (no response head)
//   bad_header      the exec stream's first frame header is not the protocol
//   truncated       a frame declares 1,000 bytes, 10 arrive, the stream ends
//   huge_frame      a frame declares 4 GiB - 1, 1 MiB arrives, the stream ends
//   flood           stdout frames without end, until a kill exec runs
//   pull_error      no image; the pull answers 200 with an error line
//   systemerr       the stream carries a daemon error frame (stream 3)
//   tar_flood       archive GET: a tar entry of 10 bytes, then bytes without end
//   tar_huge        archive GET: the stat says 10 bytes, the entry 1 GiB, bytes
//                   without end
//   tar_bad         archive GET: a body that is no tar
//   tar_dir         archive GET: the stat says a directory, bytes without end
// Usage: node fake_daemon.mjs <socket path> <mode>. Loopback only (a unix
// socket); it stops when its parent closes its stdin.
import net from "node:net";
import fs from "node:fs";

const [socketPath, mode] = process.argv.slice(2);
try { fs.unlinkSync(socketPath); } catch {}

const CONTAINER = "c0ffee".padEnd(64, "0");
let execs = 0;
const floods = new Set();
const requests = [];

function frame(stream, payload) {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}

function reply(sock, status, body) {
  const text = body === undefined ? "" : JSON.stringify(body);
  sock.write(`HTTP/1.1 ${status} X\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
}

function upgraded(sock) {
  sock.write("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n");
}

function onExecStart(sock, id) {
  if (mode === "hang_exec") return;
  const kill = id.startsWith("kill");
  if (kill) {
    // a kill exec ends every flood, at a frame boundary (whole chunks are
    // queued, so ending after the last one cuts no frame)
    for (const s of floods) { s.stopped = true; s.end(); }
    floods.clear();
    sock.write("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n");
    sock.end();
    return;
  }
  upgraded(sock);
  // the wrapper's pid line comes first, as from a real sh
  sock.write(frame(2, Buffer.from("\x1esk-pid:42\n")));
  if (mode === "bad_header") {
    sock.write(Buffer.from([9, 9, 9, 9, 0, 0, 0, 4]));
    sock.write("oops");
  } else if (mode === "truncated") {
    const h = Buffer.alloc(8); h[0] = 1; h.writeUInt32BE(1000, 4);
    sock.write(Buffer.concat([h, Buffer.alloc(10, 120)]));
    sock.end();
  } else if (mode === "huge_frame") {
    const h = Buffer.alloc(8); h[0] = 1; h.writeUInt32BE(0xffffffff, 4);
    sock.write(h);
    sock.write(Buffer.alloc(1 << 20, 121));
    sock.end();
  } else if (mode === "systemerr") {
    sock.write(frame(3, Buffer.from("exec failed: the daemon says no")));
    sock.end();
  } else if (mode === "flood") {
    floods.add(sock);
    const chunk = frame(1, Buffer.alloc(64 << 10, 122));
    const pump = () => {
      while (!sock.stopped && !sock.destroyed && sock.write(chunk)) {}
      if (!sock.stopped && !sock.destroyed) sock.once("drain", pump);
    };
    sock.on("close", () => floods.delete(sock));
    pump();
  } else {
    sock.write(frame(1, Buffer.from("ok\n")));
    sock.end();
  }
}

// A ustar header of a regular file name of size bytes.
function tarHeader(name, size) {
  const h = Buffer.alloc(512);
  h.write(name, 0);
  h.write("0000644\0", 100); h.write("0000000\0", 108); h.write("0000000\0", 116);
  h.write(size.toString(8).padStart(11, "0") + "\0", 124);
  h.write("00000000000\0", 136);
  h.write("        ", 148);
  h.write("0", 156);
  h.write("ustar\0" + "00", 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
  return h;
}

function onArchive(sock, method) {
  const dir = mode === "tar_dir";
  const stat = { name: "f", size: dir ? 4096 : 10, mode: dir ? 2147484141 : 420, mtime: "2026-01-02T03:04:05Z", linkTarget: "" };
  const b64 = Buffer.from(JSON.stringify(stat)).toString("base64");
  const head = `HTTP/1.1 200 OK\r\nX-Docker-Container-Path-Stat: ${b64}\r\n`;
  if (method === "HEAD") return sock.write(`${head}Content-Length: 0\r\n\r\n`);
  if (mode === "tar_bad") {
    const junk = Buffer.alloc(2048, 0x41);
    sock.write(`${head}Content-Type: application/x-tar\r\nContent-Length: ${junk.length}\r\n\r\n`);
    return sock.write(junk);
  }
  sock.write(`${head}Content-Type: application/x-tar\r\n\r\n`); // no length: to the close
  sock.write(tarHeader("f", mode === "tar_huge" ? 1 << 30 : 10));
  const chunk = Buffer.alloc(64 << 10, 0x78);
  const pump = () => {
    while (!sock.destroyed && sock.write(chunk)) {}
    if (!sock.destroyed) sock.once("drain", pump);
  };
  pump();
}

function route(sock, method, path) {
  requests.push(`${method} ${path}`);
  const p = path.replace(/^\/v[0-9.]+/, "");
  if (p === "/version") return reply(sock, 200, { ApiVersion: "1.41", MinAPIVersion: "1.24", Version: "fake" });
  if (p.startsWith("/containers/json")) {
    if (mode === "pull_error") return reply(sock, 200, []);
    return reply(sock, 200, [{ Id: CONTAINER, Names: ["/fake"], State: "running" }]);
  }
  if (p.startsWith("/images/") && p.endsWith("/json")) return reply(sock, 404, { message: "No such image" });
  if (p.startsWith("/images/create")) {
    const line = JSON.stringify({ errorDetail: { message: "manifest unknown" }, error: "manifest unknown" });
    sock.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const body = `{"status":"Pulling"}\n${line}\n`;
    sock.write(`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    return;
  }
  if (p === `/containers/${CONTAINER}/json`)
    return reply(sock, 200, { Id: CONTAINER, Name: "/fake", Created: "2026-01-02T03:04:05.5Z", State: { Running: true, Status: "running" } });
  if (p === `/containers/${CONTAINER}/exec`) {
    execs++;
    return "exec";
  }
  const m = p.match(/^\/exec\/([^/]+)\/(start|json)$/);
  if (m && m[2] === "start") return onExecStart(sock, m[1]);
  if (m) return reply(sock, 200, { ID: m[1], Running: false, ExitCode: 0, Pid: 0 });
  if (p.startsWith(`/containers/${CONTAINER}/archive`)) return onArchive(sock, method);
  if (p.startsWith(`/containers/${CONTAINER}`)) return reply(sock, 204);
  reply(sock, 404, { message: `no such route ${method} ${p}` });
}

const server = net.createServer((sock) => {
  sock.on("error", () => {});
  if (mode === "hang") return;
  let buf = Buffer.alloc(0);
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = buf.subarray(0, end).toString();
    const len = Number((head.match(/content-length: *(\d+)/i) || [])[1] || 0);
    if (buf.length < end + 4 + len) return;
    const body = buf.subarray(end + 4, end + 4 + len).toString();
    buf = buf.subarray(end + 4 + len);
    const [method, path] = head.split(" ");
    const r = route(sock, method, path);
    if (r === "exec") {
      // kill execs are told apart by their command
      const kill = /kill -\d+ -/.test(body);
      reply(sock, 201, { Id: `${kill ? "kill" : "exec"}${execs}` });
    }
    if (buf.length) onData(Buffer.alloc(0));
  };
  sock.on("data", onData);
});
server.listen(socketPath, () => process.stdout.write("LISTENING 0\n"));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
