// Minimal HS256 JWTs for exec leases: the lease JWT is the second offered
// WebSocket subprotocol, so it must only use token characters (base64url + dots).
// `exp` is a NumericDate with millisecond fractions so short test TTLs are exact.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const b64u = (buf) => Buffer.from(buf).toString('base64url');

export class JwtSigner {
  constructor() {
    this.secret = randomBytes(32);
  }

  sign(payload) {
    const head = b64u(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
    const body = b64u(JSON.stringify(payload));
    const sig = createHmac('sha256', this.secret).update(`${head}.${body}`).digest();
    return `${head}.${body}.${b64u(sig)}`;
  }

  // → { ok: true, payload } or { ok: false, why } where why is
  // 'malformed' | 'bad_signature' | 'expired'.
  verify(token, nowSec = Date.now() / 1000) {
    const parts = typeof token === 'string' ? token.split('.') : [];
    if (parts.length !== 3) return { ok: false, why: 'malformed' };
    const want = createHmac('sha256', this.secret).update(`${parts[0]}.${parts[1]}`).digest();
    let got;
    try {
      got = Buffer.from(parts[2], 'base64url');
    } catch {
      return { ok: false, why: 'malformed' };
    }
    if (got.length !== want.length || !timingSafeEqual(got, want)) return { ok: false, why: 'bad_signature' };
    let payload;
    try {
      payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    } catch {
      return { ok: false, why: 'malformed' };
    }
    if (typeof payload.exp === 'number' && payload.exp <= nowSec) return { ok: false, why: 'expired', payload };
    return { ok: true, payload };
  }
}
