/**
 * Secret redaction applied to every text before it is stored. Patterns are anchored on
 * formats vendors publish (prefixes, lengths) rather than on entropy guesses, because a
 * false positive silently destroys a user's words while a miss is bounded by the formats
 * we know. Each replacement is `[REDACTED:<kind>]`.
 */

/** What kind of secret a marker replaced. */
export type SecretKind =
  | 'private-key'
  | 'api-key'
  | 'aws-access-key'
  | 'github-token'
  | 'slack-token'
  | 'google-api-key'
  | 'bearer-token'
  | 'url-password'
  | 'env-secret'

/** The result of {@link redactSecrets}. */
export interface RedactionResult {
  /** The input with every recognised secret replaced by `[REDACTED:<kind>]`. */
  text: string
  /** How many secrets were replaced. */
  redactions: number
}

/** The marker that replaces a secret of `kind`. */
export function redactionMarker(kind: SecretKind): string {
  return `[REDACTED:${kind}]`
}

/**
 * Any redaction marker (`[REDACTED:api-key]`, `[REDACTED:env-secret]`, …), matched by shape
 * rather than by the kinds above so markers of a later version are covered too. Global:
 * reset `lastIndex` or use it through `String.prototype.replace`.
 */
export const REDACTION_MARKER_PATTERN = /\[REDACTED:[a-z][a-z0-9-]*\]/g

/**
 * `text` with every redaction marker replaced by a space. A marker says only that a secret
 * was there; its words (`redacted`, `api`, `key`, `token`, `password`) are not the text's
 * topic, so search must never match them.
 */
export function withoutRedactionMarkers(text: string): string {
  return text.includes('[REDACTED:') ? text.replace(REDACTION_MARKER_PATTERN, ' ') : text
}

interface Rule {
  kind: SecretKind
  pattern: RegExp
  /** Builds the replacement from the match groups; default: the marker alone. */
  replace?: (match: string, groups: string[]) => string | null
}

// Word-ish left boundary that also treats `_` and `-` as part of a word, so `my-sk-…`
// style identifiers and `task-manager` never start a match in the middle.
const LB = '(?<![A-Za-z0-9_\\-])'

const RULES: readonly Rule[] = [
  {
    // A whole PEM block; an unterminated block is redacted to the end of the text, since
    // the rest of a truncated key is still key material.
    kind: 'private-key',
    pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$(?![\s\S]))/g,
  },
  {
    // OpenAI (`sk-`, `sk-proj-`), Anthropic (`sk-ant-`), DeepSeek (`sk-` + 32 hex) and
    // similar: the prefix plus at least 20 key characters, so `sk-learn` is left alone.
    kind: 'api-key',
    pattern: new RegExp(`${LB}sk-[A-Za-z0-9][A-Za-z0-9_\\-]{19,}`, 'g'),
  },
  {
    kind: 'aws-access-key',
    pattern: new RegExp(`${LB}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])`, 'g'),
  },
  {
    kind: 'github-token',
    pattern: new RegExp(`${LB}(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`, 'g'),
  },
  {
    kind: 'slack-token',
    pattern: new RegExp(`${LB}xox[abprs]-[A-Za-z0-9\\-]{10,}`, 'g'),
  },
  {
    kind: 'google-api-key',
    pattern: new RegExp(`${LB}AIza[0-9A-Za-z_\\-]{35}`, 'g'),
  },
  {
    // `Authorization: Bearer x` is always a credential. A bare `bearer x` only when x looks
    // like a token (long and not a plain word), so "the bearer of bad news" survives.
    kind: 'bearer-token',
    pattern: /(\bauthorization\s*[:=]\s*["']?)?\bbearer\s+([A-Za-z0-9\-._~+/]+=*)/gi,
    replace: (match, [authorization, token]) => {
      if (!authorization && !looksLikeToken(token!)) return null
      return match.slice(0, match.length - token!.length) + redactionMarker('bearer-token')
    },
  },
  {
    // scheme://user:password@host: keep user and host, which are useful context.
    kind: 'url-password',
    pattern: /\b([a-z][a-z0-9+.\-]*:\/\/)([^\s:/?#@]+):([^\s/?#@]+)@/gi,
    replace: (_match, [scheme, user, password]) =>
      password!.startsWith('[REDACTED:') ? null : `${scheme}${user}:${redactionMarker('url-password')}@`,
  },
  {
    // Environment-style assignments of obviously secret names (OPENAI_API_KEY=…,
    // DB_PASSWORD: …). Upper-case names only: prose rarely shouts variable names.
    kind: 'env-secret',
    pattern: /\b([A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*\s*[=:]\s*["']?)([^\s"']{8,})/g,
    replace: (_match, [name, value]) => (value!.startsWith('[REDACTED:') ? null : `${name}${redactionMarker('env-secret')}`),
  },
]

function looksLikeToken(candidate: string): boolean {
  if (candidate.length < 16) return false
  // Real tokens mix classes: digits, or JWT/base64 punctuation.
  return /\d/.test(candidate) || /[._~+/=-]/.test(candidate)
}

/**
 * Replace API keys (`sk-…`, `AKIA…`, GitHub `ghp_…`/`github_pat_…`, Slack `xox?-…`, Google
 * `AIza…`), PEM private-key blocks, bearer tokens, passwords in URLs and upper-case
 * `*_SECRET=`-style assignments with `[REDACTED:<kind>]`. Pure and idempotent: redacting
 * redacted text changes nothing.
 */
export function redactSecrets(text: string): RedactionResult {
  let redactions = 0
  let out = text
  for (const rule of RULES) {
    out = out.replace(rule.pattern, (match: string, ...rest: unknown[]) => {
      // replace() passes groups, then offset, input (and named groups); keep the groups.
      const groups = rest.slice(0, countGroups(rest)).map((group) => (typeof group === 'string' ? group : ''))
      const replacement = rule.replace ? rule.replace(match, groups) : redactionMarker(rule.kind)
      if (replacement === null) return match
      redactions++
      return replacement
    })
  }
  return { text: out, redactions }
}

function countGroups(rest: unknown[]): number {
  // The offset is the first number after the groups.
  const offsetIndex = rest.findIndex((value) => typeof value === 'number')
  return offsetIndex === -1 ? rest.length : offsetIndex
}
