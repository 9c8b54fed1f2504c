// How a careless server echoes input back (fault switches that make the
// reference server quote a token or a request in an error): the text as it
// would sit inside a JSON string literal, in one of ECHO_ENCODINGS; "raw"
// is the text itself, JSON-escaped.
import { echoEncode as encode } from '../../shared/echo_encode.mjs';

export function echoEncode(v, encoding) {
  return encode(v, encoding === 'raw' ? 'json' : encoding);
}
