/**
 * What of an upstream's error may reach a client: never the channel's key (an upstream may
 * reflect it), never anything shaped like an API key or a bearer token, never an HTML page.
 * The router applies it to every upstream failure, whichever provider raised it.
 */

/** Shapes of credentials: OpenAI-style `sk-…`, Google `AIza…`, bearer tokens, long opaque tokens. */
/** Keys known by their prefix: OpenAI-style `sk-…` (the gateway's own), Google `AIza…`, bearer tokens. */
const PREFIXED_KEY_SHAPES = [
  /\b(?:sk|pk|rk|ak)-[A-Za-z0-9_-]{12,}/g,
  /\bAIza[0-9A-Za-z_-]{20,}/g,
  /\bBearer\s+[^\s"',;]+/gi,
];
const KEY_SHAPES = [...PREFIXED_KEY_SHAPES, /\b[A-Za-z0-9_-]{32,}\b/g];
/** In a path: a prefixed key, or a long run of letters and digits only (an access token is 32 of them). */
const PATH_KEY_SHAPES = [...PREFIXED_KEY_SHAPES, /\b[A-Za-z0-9]{32,}\b/g];
const HTML = /<\s*(?:!doctype|html|head|body|div|p|h\d|title|pre)\b/i;
const MAX_MESSAGE = 500;

/**
 * The forms a channel's key may come back in from an upstream that reflects what it was sent: as
 * it is, URL-encoded, in base64 and base64url, escaped in JSON; for an error also upper- and
 * lower-cased. A key shorter than 8 characters has none (it would match ordinary text).
 */
export function secretForms(secret: string, { anyCase = false } = {}): readonly string[] {
  if (secret.length < 8) return [];
  const memo = anyCase ? formsAnyCase : formsAsIs;
  let forms = memo.get(secret);
  if (!forms) {
    const escaped = JSON.stringify(secret).slice(1, -1);
    // JSON may escape a '/' too (PHP does): the text then holds `\/` where the key holds `/`.
    const all = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), escaped, escaped.replaceAll('/', '\\/')];
    if (anyCase) all.push(secret.toUpperCase(), secret.toLowerCase());
    forms = [...new Set(all)];
    // Once per channel key, not per call (a process sees a handful of keys).
    if (memo.size >= 1000) memo.clear();
    memo.set(secret, forms);
  }
  return forms;
}
const formsAsIs = new Map<string, readonly string[]>();
const formsAnyCase = new Map<string, readonly string[]>();

/** `text` with every one of `forms` (secretForms) replaced by `[redacted]`; the same string when none is in it. */
export function withoutSecretForms(text: string, forms: readonly string[]): string {
  let out = text;
  for (const form of forms) if (out.includes(form)) out = out.split(form).join('[redacted]');
  return out;
}

/**
 * Fields of a structured credential that say where or how, or name an account, and are no secret:
 * never taken out of a text. A Google service account's key names its endpoints and certificate
 * URLs beside its secrets; an Azure service principal its tenant, application and authority.
 */
const NOT_SECRET_FIELDS = new Set([
  'api_version', 'region', 'project', 'project_id', 'location', 'deployment', 'resource', 'client_email', 'type', 'auth', 'credentials',
  'token_uri', 'auth_uri', 'auth_provider_x509_cert_url', 'client_x509_cert_url', 'universe_domain',
  'tenant_id', 'client_id', 'authority_host', 'scope',
]);

/**
 * The secrets of a channel key: the key itself, and for a structured credential (a JSON object in
 * the key field, `{"api_key":"…","api_version":"…"}`) each of its string fields but those that only
 * say where or how (`api_version`, `region`), which an upstream echoes in ordinary messages. An
 * upstream reflects the inner key it was sent, never the JSON around it.
 */
export function channelKeySecrets(key: string): string[] {
  if (!key.trimStart().startsWith('{')) return [key];
  let credential: unknown;
  try {
    credential = JSON.parse(key);
  } catch {
    return [key];
  }
  if (credential === null || typeof credential !== 'object') return [key];
  const inner = Object.entries(credential).filter(([field, value]) => typeof value === 'string' && !NOT_SECRET_FIELDS.has(field)).map(([, value]) => value as string);
  return [key, ...inner];
}

/**
 * The forms of a channel key to take out of what an upstream answers with success (each secret of
 * a structured credential's): none for a secret under 20 characters. A self-hosted upstream's
 * placeholder (`not-needed`, `lm-studio`, `sk-no-key-required`) is no secret, and a word a model
 * may well write.
 */
export function replySecretForms(key: string): readonly string[] {
  const secrets = channelKeySecrets(key).filter((secret) => secret.length >= 20);
  if (secrets.length === 1) return secretForms(secrets[0]!);
  return secrets.flatMap((secret) => secretForms(secret));
}

/** Whether JSON text holds any of `forms`: a scan of the text, before anything is walked. */
export function mentionsAny(text: string, forms: readonly string[]): boolean {
  for (const form of forms) if (text.includes(form)) return true;
  return false;
}

/**
 * A parsed JSON value with every string in it (field names too) stripped of `forms`: redacted
 * after parsing, so a form that also spells a number, or a part of the JSON's syntax, is never cut
 * out of the text.
 */
export function withoutSecretFormsIn(value: unknown, forms: readonly string[]): unknown {
  if (typeof value === 'string') return withoutSecretForms(value, forms);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => withoutSecretFormsIn(item, forms));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [withoutSecretForms(key, forms), withoutSecretFormsIn(item, forms)]));
}

/**
 * A reply parsed from `text`, without `forms` (replySecretForms) in its strings: walked only when
 * the text mentions one, so a clean reply costs a scan of its text.
 */
export function withoutReflectedSecret(value: unknown, text: string, forms: readonly string[]): unknown {
  return forms.length > 0 && mentionsAny(text, forms) ? withoutSecretFormsIn(value, forms) : value;
}

/** `text` with `shapes` (every key shape by default) replaced by `[redacted]`. */
export function withoutKeyShapes(text: string, shapes: readonly RegExp[] = KEY_SHAPES): string {
  let out = text;
  for (const shape of shapes) out = out.replace(shape, '[redacted]');
  return out;
}

/**
 * A URL path without the keys a client may have put in it: a long model name in a path, which has
 * hyphens, is kept (it would pass for an opaque token).
 */
export function withoutPathKeys(path: string): string {
  return withoutKeyShapes(path, PATH_KEY_SHAPES);
}

/** `text` with `secrets` and every key-shaped run replaced by `[redacted]`, shortened. */
export function redactUpstreamText(text: string, secrets: readonly string[]): string {
  const out = withoutKeyShapes(withoutSecretForms(text, secrets.filter((secret) => secret.length >= 4)));
  if (HTML.test(out)) return 'the upstream sent an HTML page';
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE)}…` : out;
}

/** Every string in a parsed JSON error body, redacted the same way (keys of objects too). */
export function redactUpstreamBody(body: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof body === 'string') return redactUpstreamText(body, secrets);
  if (body === null || typeof body !== 'object') return body;
  if (depth > 8) return '[redacted: nested too deeply]';
  if (Array.isArray(body)) return body.slice(0, 50).map((item) => redactUpstreamBody(item, secrets, depth + 1));
  return Object.fromEntries(
    Object.entries(body).slice(0, 50).map(([key, value]) => [redactUpstreamText(key, secrets), redactUpstreamBody(value, secrets, depth + 1)]),
  );
}
