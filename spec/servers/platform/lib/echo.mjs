// How a careless server echoes input back (fault switches that make the
// reference server quote a token or a request in an error): the text as it
// would sit inside a JSON string literal, in one of ECHO_ENCODINGS.

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
    case 'json_slash': return JSON.stringify(v).slice(1, -1).replaceAll('/', '\\/');
    case 'json_u': return [...v].map((ch) => [...ch].map((u) => {
      let out = '';
      for (let i = 0; i < u.length; i++) out += `\\u${u.charCodeAt(i).toString(16).padStart(4, '0').toUpperCase()}`;
      return out;
    }).join('')).join('');
    case 'percent': return pct(false, false);
    case 'percent_lower': return pct(true, false);
    case 'form': return pct(false, true);
    case 'base64': return bytes.toString('base64');
    case 'base64url': return bytes.toString('base64url');
    default: return JSON.stringify(v).slice(1, -1);
  }
}

