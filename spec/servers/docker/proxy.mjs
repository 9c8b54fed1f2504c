// A TCP (or TLS) front for a unix-socket Docker daemon, so DockerSandbox's
// tcp:// path (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) runs
// against the real Podman service of the specs. Loopback only; prints
// "LISTENING <port>" and exits when its stdin closes.
// Usage: node proxy.mjs <unix socket> [<cert dir with ca.pem server.pem server-key.pem>]
import net from "node:net";
import tls from "node:tls";
import fs from "node:fs";

const [target, certDir] = process.argv.slice(2);
const connect = (client) => {
  const upstream = net.connect(target);
  client.pipe(upstream);
  upstream.pipe(client);
  // half-closes travel both ways (stdin's end reaches the daemon)
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
};
const server = certDir
  ? tls.createServer({
      key: fs.readFileSync(`${certDir}/server-key.pem`),
      cert: fs.readFileSync(`${certDir}/server.pem`),
      ca: fs.readFileSync(`${certDir}/ca.pem`),
      requestCert: true,
      rejectUnauthorized: true,
      allowHalfOpen: true,
    }, connect)
  : net.createServer({ allowHalfOpen: true }, connect);
server.listen(0, "127.0.0.1", () => process.stdout.write(`LISTENING ${server.address().port}\n`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
