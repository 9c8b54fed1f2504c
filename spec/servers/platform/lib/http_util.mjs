// Response descriptors and the proxy's error body shape:
// {"error": {"message": <string>, "type": <string>}}.

const TYPE_BY_STATUS = {
  400: 'invalid_request',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found',
  405: 'invalid_request',
  409: 'conflict',
  410: 'gone',
  412: 'precondition_failed',
  413: 'invalid_request',
  429: 'rate_limit_error',
};

export function errorType(status) {
  return TYPE_BY_STATUS[status] ?? (status >= 500 ? 'internal_error' : 'invalid_request');
}

export function jsonRes(status, json, headers = {}) {
  return { status, json, headers };
}

export function errorRes(status, message, type = errorType(status)) {
  return { status, json: { error: { message, type } }, headers: {} };
}

export function emptyRes(status = 204, headers = {}) {
  return { status, headers };
}

export const HTML_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n' +
  '<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';

export class HttpError extends Error {
  constructor(status, message, type) {
    super(message);
    this.status = status;
    this.type = type ?? errorType(status);
  }
}

export async function readBody(req, limit = 64 * 1024 * 1024) {
  const chunks = [];
  let n = 0;
  for await (const c of req) {
    n += c.length;
    if (n > limit) throw new HttpError(413, 'Request body too large');
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

// Parse a JSON body; `required` = the route needs one.
export function parseJsonBody(buf, required) {
  if (buf.length === 0) {
    if (required) throw new HttpError(400, 'Request body must be a JSON object');
    return undefined;
  }
  let v;
  try {
    v = JSON.parse(buf.toString('utf8'));
  } catch {
    throw new HttpError(400, 'Malformed JSON body');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError(400, 'Request body must be a JSON object');
  return v;
}

// Serialize a descriptor; returns a short description for the request log.
export function sendRes(req, res, d) {
  const headers = { ...d.headers };
  let body;
  if (d.raw !== undefined) {
    body = Buffer.isBuffer(d.raw) ? d.raw : Buffer.from(String(d.raw));
  } else if (d.json !== undefined) {
    body = Buffer.from(JSON.stringify(d.json));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  if (body !== undefined) headers['content-length'] = String(d.contentLength ?? body.length);
  else if (d.contentLength !== undefined) headers['content-length'] = String(d.contentLength);
  res.writeHead(d.status, headers);
  if (req.method === 'HEAD' || body === undefined || d.status === 204 || d.status === 304) res.end();
  else res.end(body);
}
