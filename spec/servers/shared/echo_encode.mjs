// How a careless reference server echoes a secret or a request back in an
// error (their fault switches): v written in one of raw, json (as inside a
// JSON string literal, no quotes), json_slash (json with "\/"), json_u
// (every UTF-16 unit as \uXXXX), percent, percent_lower, form (percent with
// "+" for space), base64, base64url. Shared by the Platform and Modal
// servers.
export function echoEncode(v, encoding) {
  const bytes = Buffer.from(v, 'utf8');
  const pct = (lower, form) => [...bytes].map((b) => {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9_.~-]/.test(c)) return c;
    if (form && c === ' ') return '+';
    const h = b.toString(16).padStart(2, '0');
    return `%${lower ? h : h.toUpperCase()}`;
  }).join('');
  switch (encoding) {
    case 'raw': return v;
    case 'json': return JSON.stringify(v).slice(1, -1);
    case 'json_slash': return JSON.stringify(v).slice(1, -1).replaceAll('/', '\\/');
    case 'json_u': {
      let out = '';
      for (let i = 0; i < v.length; i++) out += `\\u${v.charCodeAt(i).toString(16).padStart(4, '0').toUpperCase()}`;
      return out;
    }
    case 'percent': return pct(false, false);
    case 'percent_lower': return pct(true, false);
    case 'form': return pct(false, true);
    case 'base64': return bytes.toString('base64');
    case 'base64url': return bytes.toString('base64url');
    default: throw new Error(`unknown echo encoding ${encoding}`);
  }
}
