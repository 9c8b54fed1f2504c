// Fault switches and tunable settings: one JSON document, set by flags at start
// and replaced at runtime through POST /__admin/faults. Rules are counted
// (skip N matching events, then apply `times` times, or forever when null).

export const HTTP_ROUTES = new Set([
  '*', 'create', 'get', 'delete', 'lease', 'exec', 'checkpoint', 'checkpoint_delete',
  'template_build', 'template_create', 'template_get',
  'fs', 'fs_get', 'fs_list', 'fs_head', 'fs_put', 'fs_delete', 'fs_copy', 'fs_rename', 'fs_mkdir',
]);

export const WS_ACTIONS = new Set([
  'close_before_exit', 'reject', 'stall', 'delay', 'noise', 'durable_session',
  'exit_without_code', 'output_after_exit', 'close_after_exit', 'chunk_bytes', 'flood',
]);

const BODY_KINDS = new Set(['json', 'html', 'malformed', 'empty', 'text', 'endless']);
// How an echoed secret is written into a synthesized error message
// ({token:<encoding>} and {request:<encoding>} placeholders in `message`).
export const ECHO_ENCODINGS = new Set([
  'raw', 'json_slash', 'json_u', 'percent', 'percent_lower', 'form', 'base64', 'base64url',
]);
const CLOSE_AT = new Set(['open', 'init', 'exit']);

export const DEFAULT_SETTINGS = Object.freeze({
  lease_ttl_ms: 3_600_000,
  lease_expires_at_null: false,
  exit_close_grace_ms: 5_000,
  checkpoint_on_delete: false,
  idle_ms_per_minute: 60_000,
  strict_subprotocols: true,
  strict_fields: true,
});

const HTTP_RULE_KEYS = new Set([
  'route', 'method', 'sandbox', 'skip', 'times', 'status', 'body', 'text', 'json',
  'error_type', 'message', 'delay_ms', 'drop', 'expired', 'headers', 'declared_length',
]);
const WS_RULE_KEYS = new Set([
  'action', 'sandbox', 'lease_index', 'skip', 'times', 'code', 'reason', 'at',
  'destroy_sandbox', 'status', 'bytes', 'delay_ms',
]);

export class FaultError extends Error {}

function fail(msg) {
  throw new FaultError(msg);
}

function normTimes(v, where) {
  if (v === undefined || v === null || v === 'always') return null;
  if (v === 'once') return 1;
  if (Number.isInteger(v) && v >= 0) return v;
  fail(`${where}.times must be a non-negative integer, "once", "always" or null`);
}

function normNonNegInt(v, where, dflt) {
  if (v === undefined) return dflt;
  if (Number.isInteger(v) && v >= 0) return v;
  fail(`${where} must be a non-negative integer`);
}

// Close codes that may be put on the wire; 1005/1006 are "no code" and
// "abnormal" and are produced by closing without a code / dropping TCP.
export function validCloseCode(code) {
  return code === 1005 || code === 1006 ||
    (code >= 1000 && code <= 1014 && code !== 1004) || (code >= 3000 && code <= 4999);
}

function normHttpRule(r, i) {
  const where = `http[${i}]`;
  if (typeof r !== 'object' || r === null || Array.isArray(r)) fail(`${where} must be an object`);
  for (const k of Object.keys(r)) if (!HTTP_RULE_KEYS.has(k)) fail(`${where}: unknown key ${k}`);
  const route = r.route ?? '*';
  if (!HTTP_ROUTES.has(route)) fail(`${where}.route: unknown route ${route}`);
  const rule = {
    route,
    method: r.method ? String(r.method).toUpperCase() : undefined,
    sandbox: r.sandbox,
    skip: normNonNegInt(r.skip, `${where}.skip`, 0),
    times: normTimes(r.times, where),
    delay_ms: normNonNegInt(r.delay_ms, `${where}.delay_ms`, 0),
    drop: r.drop === true,
    expired: r.expired === true,
    status: r.status,
    body: r.body,
    text: r.text,
    json: r.json,
    error_type: r.error_type,
    message: r.message,
    headers: r.headers,
    declared_length: r.declared_length,
    seen: 0,
    applied: 0,
  };
  if (rule.declared_length !== undefined && (!Number.isInteger(rule.declared_length) || rule.declared_length < 0 || rule.body !== 'endless')) {
    fail(`${where}.declared_length must be a non-negative integer, with body "endless"`);
  }
  if (typeof rule.message === 'string') {
    for (const m of rule.message.matchAll(/\{(token|request):([a-z_0-9]+)\}/g)) {
      if (!ECHO_ENCODINGS.has(m[2])) fail(`${where}.message: unknown echo encoding ${m[2]}`);
    }
  }
  if (rule.status !== undefined && !(Number.isInteger(rule.status) && rule.status >= 100 && rule.status <= 599)) {
    fail(`${where}.status must be an HTTP status code`);
  }
  if (rule.body !== undefined && !BODY_KINDS.has(rule.body)) fail(`${where}.body must be one of ${[...BODY_KINDS].join(', ')}`);
  if (rule.headers !== undefined && (typeof rule.headers !== 'object' || rule.headers === null)) fail(`${where}.headers must be an object`);
  if (rule.expired && route !== 'lease') fail(`${where}.expired only applies to route "lease"`);
  if (!rule.drop && !rule.expired && rule.status === undefined && rule.body === undefined &&
      rule.json === undefined && rule.delay_ms === 0) {
    fail(`${where} has no effect (give status, body, json, delay_ms, drop or expired)`);
  }
  return rule;
}

function normWsRule(r, i) {
  const where = `ws[${i}]`;
  if (typeof r !== 'object' || r === null || Array.isArray(r)) fail(`${where} must be an object`);
  for (const k of Object.keys(r)) if (!WS_RULE_KEYS.has(k)) fail(`${where}: unknown key ${k}`);
  if (!WS_ACTIONS.has(r.action)) fail(`${where}.action must be one of ${[...WS_ACTIONS].join(', ')}`);
  const rule = {
    action: r.action,
    sandbox: r.sandbox,
    lease_index: r.lease_index === undefined ? undefined : normNonNegInt(r.lease_index, `${where}.lease_index`),
    skip: normNonNegInt(r.skip, `${where}.skip`, 0),
    times: normTimes(r.times, where),
    seen: 0,
    applied: 0,
  };
  if (r.action === 'close_before_exit' || r.action === 'close_after_exit') {
    rule.code = r.code ?? (r.action === 'close_after_exit' ? 1000 : 1011);
    if (!Number.isInteger(rule.code) || !validCloseCode(rule.code)) fail(`${where}.code is not a usable close code`);
    rule.reason = r.reason ?? (rule.code === 1011 ? 'server_error' : '');
    if (typeof rule.reason !== 'string' || Buffer.byteLength(rule.reason) > 123) fail(`${where}.reason must be a string of at most 123 bytes`);
    for (const m of rule.reason.matchAll(/\{request:([a-z_0-9]+)\}/g)) {
      if (!ECHO_ENCODINGS.has(m[1])) fail(`${where}.reason: unknown echo encoding ${m[1]}`);
    }
    rule.at = r.at ?? 'exit';
    if (!CLOSE_AT.has(rule.at)) fail(`${where}.at must be one of open, init, exit`);
    rule.destroy_sandbox = r.destroy_sandbox === true;
  }
  if (r.action === 'reject') {
    rule.status = r.status ?? 401;
    if (!Number.isInteger(rule.status) || rule.status < 400 || rule.status > 599) fail(`${where}.status must be 4xx or 5xx`);
  }
  if (r.action === 'delay') rule.delay_ms = normNonNegInt(r.delay_ms, `${where}.delay_ms`, 0);
  if (r.action === 'flood') rule.delay_ms = normNonNegInt(r.delay_ms, `${where}.delay_ms`, 3000);
  if (r.action === 'chunk_bytes') {
    rule.bytes = normNonNegInt(r.bytes, `${where}.bytes`, 1);
    if (rule.bytes < 1) fail(`${where}.bytes must be >= 1`);
  }
  return rule;
}

// Turn a user document into the internal form; throws FaultError on any mistake
// so a typo in a test never silently disables a fault.
export function normalizeFaults(doc) {
  if (doc === undefined || doc === null) doc = {};
  if (typeof doc !== 'object' || Array.isArray(doc)) fail('faults must be a JSON object');
  const out = { http: [], ws: [], ...DEFAULT_SETTINGS };
  for (const [k, v] of Object.entries(doc)) {
    if (k === 'http') {
      if (!Array.isArray(v)) fail('http must be an array');
      out.http = v.map(normHttpRule);
    } else if (k === 'ws') {
      if (!Array.isArray(v)) fail('ws must be an array');
      out.ws = v.map(normWsRule);
    } else if (k in DEFAULT_SETTINGS) {
      const d = DEFAULT_SETTINGS[k];
      if (typeof d === 'boolean') {
        if (typeof v !== 'boolean') fail(`${k} must be a boolean`);
      } else if (k === 'lease_ttl_ms') {
        if (!Number.isInteger(v)) fail(`${k} must be an integer (negative = already expired)`);
      } else if (!Number.isInteger(v) || v < 0) {
        fail(`${k} must be a non-negative integer`);
      }
      out[k] = v;
    } else {
      fail(`unknown faults key ${k}`);
    }
  }
  return out;
}

// Plain view for GET /__admin/faults (includes the per-rule counters).
export function describeFaults(f) {
  const strip = (r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));
  return { ...f, http: f.http.map(strip), ws: f.ws.map(strip) };
}

function routeMatches(ruleRoute, route) {
  return ruleRoute === '*' || ruleRoute === route || (ruleRoute === 'fs' && route.startsWith('fs_'));
}

function consume(rule) {
  if (rule.seen < rule.skip) {
    rule.seen++;
    return false;
  }
  rule.seen++;
  if (rule.times !== null && rule.applied >= rule.times) return false;
  rule.applied++;
  return true;
}

export function isTerminating(r) {
  return r.drop || r.status !== undefined || r.json !== undefined || (r.body !== undefined && r.body !== 'malformed');
}

// HTTP rules, in three passes so that a rule is only counted when it is
// consulted: (1) terminating rules (status/body/json/drop): the first one that
// fires wins and the rest are not consulted; (2) only if none fired, modifier
// rules (malformed body on the real answer, expired lease); (3) delay-only
// rules always. Returns the rules that fired.
export function takeHttpRules(faults, { route, method, sandboxId }) {
  const matching = faults.http.filter((r) => routeMatches(r.route, route) &&
    (!r.method || r.method === method) && (r.sandbox === undefined || r.sandbox === sandboxId));
  const hits = [];
  const terminal = matching.filter(isTerminating).find(consume);
  if (terminal) hits.push(terminal);
  else for (const r of matching.filter((x) => !isTerminating(x) && (x.expired || x.body === 'malformed'))) if (consume(r)) hits.push(r);
  for (const r of matching.filter((x) => !isTerminating(x) && !x.expired && x.body === undefined)) if (consume(r)) hits.push(r);
  return hits;
}

const HANDSHAKE_ACTIONS = new Set(['delay', 'stall', 'reject']);

// WebSocket rules, per phase. 'handshake' (before the JWT check): delay rules
// all fire; of stall/reject the first that fires wins. 'session' (only for an
// accepted socket): for each action the first rule that fires wins.
export function takeWsRules(faults, { sandboxId, leaseIndex }, phase) {
  const matching = faults.ws.filter((r) => (phase === 'handshake') === HANDSHAKE_ACTIONS.has(r.action) &&
    (r.sandbox === undefined || r.sandbox === sandboxId) && (r.lease_index === undefined || r.lease_index === leaseIndex));
  const hits = [];
  let gate = null;
  const taken = new Set();
  for (const r of matching) {
    if (r.action === 'delay') {
      if (consume(r)) hits.push(r);
    } else if (phase === 'handshake') {
      if (!gate && consume(r)) {
        gate = r;
        hits.push(r);
      }
    } else if (!taken.has(r.action) && consume(r)) {
      taken.add(r.action);
      hits.push(r);
    }
  }
  return hits;
}

function parseTimes(v, flag) {
  if (v === 'once') return 1;
  if (v === 'always') return null;
  const n = Number(v);
  if (Number.isInteger(n) && n >= 0) return n;
  throw new FaultError(`${flag}: expected once, always or a count, got ${v}`);
}

// Shorthand command-line flags → rules appended to the --faults document.
export function shorthandToFaults(opts) {
  const doc = {};
  const http = [];
  const ws = [];
  if (opts['close-before-exit'] !== undefined) {
    ws.push({
      action: 'close_before_exit',
      times: parseTimes(opts['close-before-exit'], '--close-before-exit'),
      code: opts['close-code'] !== undefined ? Number(opts['close-code']) : 1011,
      ...(opts['close-reason'] !== undefined ? { reason: opts['close-reason'] } : {}),
    });
  }
  if (opts['lease-410'] !== undefined) http.push({ route: 'lease', status: 410, times: parseTimes(opts['lease-410'], '--lease-410') });
  if (opts['create-5xx'] !== undefined) {
    const [n, st] = String(opts['create-5xx']).split(':');
    http.push({ route: 'create', status: st ? Number(st) : 500, times: parseTimes(n, '--create-5xx') });
  }
  if (opts['html-502'] !== undefined) {
    http.push({ route: opts['html-502-route'] ?? '*', status: 502, body: 'html', times: parseTimes(opts['html-502'], '--html-502') });
  }
  if (opts['malformed-json'] !== undefined) {
    http.push({ route: opts['malformed-json-route'] ?? '*', body: 'malformed', times: parseTimes(opts['malformed-json'], '--malformed-json') });
  }
  if (opts['delay-ms'] !== undefined) http.push({ route: opts['delay-route'] ?? '*', delay_ms: Number(opts['delay-ms']) });
  if (opts['expired-lease'] !== undefined) http.push({ route: 'lease', expired: true, times: parseTimes(opts['expired-lease'], '--expired-lease') });
  if (opts['lease-ttl-ms'] !== undefined) doc.lease_ttl_ms = Number(opts['lease-ttl-ms']);
  if (opts['exit-close-grace-ms'] !== undefined) doc.exit_close_grace_ms = Number(opts['exit-close-grace-ms']);
  if (opts['idle-ms-per-minute'] !== undefined) doc.idle_ms_per_minute = Number(opts['idle-ms-per-minute']);
  if (http.length) doc.http = http;
  if (ws.length) doc.ws = ws;
  return doc;
}
