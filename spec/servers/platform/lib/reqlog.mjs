// What the server saw, for test assertions through GET /__admin/log.
// Bounded so a long benchmark cannot grow the server without limit.

const MAX_ENTRIES = 20_000;
const MAX_FRAMES = 2_000;
const MAX_BODY = 64 * 1024;
const MAX_BINARY_SAMPLE = 4_096;

export function bodyForLog(buf, contentType = '') {
  if (!buf || buf.length === 0) return undefined;
  const text = buf.subarray(0, MAX_BODY).toString('utf8');
  if (/json/i.test(contentType) || /^\s*[{[]/.test(text)) {
    try {
      return { json: JSON.parse(buf.toString('utf8')) };
    } catch {
      // fall through: logged as text
    }
  }
  if (Buffer.from(text, 'utf8').equals(buf.subarray(0, MAX_BODY))) {
    return { text, truncated: buf.length > MAX_BODY || undefined };
  }
  return { base64: buf.subarray(0, MAX_BODY).toString('base64'), length: buf.length };
}

export class RequestLog {
  constructor() {
    this.reset();
  }

  reset() {
    this.seq = 0;
    this.requests = [];
    this.ws = [];
  }

  addRequest(entry) {
    entry.seq = ++this.seq;
    entry.at = new Date().toISOString();
    this.requests.push(entry);
    if (this.requests.length > MAX_ENTRIES) this.requests.shift();
    return entry;
  }

  addWs(entry) {
    entry.seq = ++this.seq;
    entry.at = new Date().toISOString();
    entry.frames_received = [];
    entry.frames_sent = { stdout_frames: 0, stdout_bytes: 0, stderr_frames: 0, stderr_bytes: 0, text: [] };
    this.ws.push(entry);
    if (this.ws.length > MAX_ENTRIES) this.ws.shift();
    return entry;
  }

  static frameIn(entry, data, isBinary) {
    if (entry.frames_received.length >= MAX_FRAMES) {
      entry.frames_dropped = (entry.frames_dropped ?? 0) + 1;
      return;
    }
    if (isBinary) {
      entry.frames_received.push({
        kind: 'binary',
        length: data.length,
        tag: data.length ? data[0] : undefined,
        base64: data.subarray(0, MAX_BINARY_SAMPLE).toString('base64'),
      });
      return;
    }
    const text = data.toString('utf8');
    const f = { kind: 'text', text: text.slice(0, MAX_BODY) };
    try {
      f.json = JSON.parse(text);
    } catch {
      // malformed text frames are logged as text only
    }
    entry.frames_received.push(f);
  }

  since(n) {
    return {
      requests: this.requests.filter((e) => e.seq > n),
      ws: this.ws.filter((e) => e.seq > n),
      seq: this.seq,
    };
  }
}
