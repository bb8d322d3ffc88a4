/**
 * Parsing model replies that should be JSON. Models wrap JSON in ```json fences, put a
 * sentence before it, or leave a trailing comma; those are repaired because the repair
 * cannot change the meaning. Anything else (single quotes, unquoted keys, a cut-off reply)
 * is rejected: guessing would store something the model did not say.
 */

/** A repair that was applied, for logs and tests. */
export type JsonRepair = 'fence' | 'surrounding-text' | 'trailing-comma' | 'comment' | 'bom'

/** Result of {@link parseModelJson}. */
export type ModelJsonResult =
  | { readonly ok: true; readonly value: unknown; readonly repairs: readonly JsonRepair[] }
  | { readonly ok: false; readonly error: string }

/**
 * Parse a model reply as JSON, repairing only meaning-preserving damage.
 * @param text - the raw reply text.
 * @param expect - the top-level type expected; used to pick the JSON value out of prose.
 */
export function parseModelJson(text: string, expect: 'object' | 'array' = 'object'): ModelJsonResult {
  if (typeof text !== 'string') return { ok: false, error: 'reply is not text' }
  const repairs: JsonRepair[] = []
  let body = text
  if (body.charCodeAt(0) === 0xfeff) {
    body = body.slice(1)
    repairs.push('bom')
  }
  body = body.trim()
  if (!body) return { ok: false, error: 'reply is empty' }

  const direct = tryParse(body)
  if (direct.ok) return { ok: true, value: direct.value, repairs }

  const candidates: { text: string; repairs: JsonRepair[] }[] = []
  for (const fenced of fencedBlocks(body)) candidates.push({ text: fenced, repairs: ['fence'] })
  const open = expect === 'object' ? '{' : '['
  const start = body.indexOf(open)
  if (start >= 0) {
    const end = matchingClose(body, start)
    if (end > start) {
      const inner = body.slice(start, end + 1)
      if (inner.length !== body.length) candidates.push({ text: inner, repairs: ['surrounding-text'] })
      else candidates.push({ text: inner, repairs: [] })
    }
  }
  let lastError = direct.error
  for (const candidate of candidates) {
    let slice = candidate.text.trim()
    const steps = [...candidate.repairs]
    if (steps.includes('fence')) {
      // A fence may still hold prose around the JSON.
      const innerStart = slice.indexOf(open)
      if (innerStart > 0) {
        const end = matchingClose(slice, innerStart)
        if (end > innerStart) {
          slice = slice.slice(innerStart, end + 1)
          steps.push('surrounding-text')
        }
      }
    }
    const first = tryParse(slice)
    if (first.ok) return { ok: true, value: first.value, repairs: [...repairs, ...steps] }
    const cleaned = cleanOutsideStrings(slice)
    if (cleaned.repairs.length > 0) {
      const second = tryParse(cleaned.text)
      if (second.ok) return { ok: true, value: second.value, repairs: [...repairs, ...steps, ...cleaned.repairs] }
      lastError = second.error
    } else {
      lastError = first.error
    }
  }
  // Trailing commas or comments in an otherwise bare reply.
  const cleaned = cleanOutsideStrings(body)
  if (cleaned.repairs.length > 0) {
    const parsed = tryParse(cleaned.text)
    if (parsed.ok) return { ok: true, value: parsed.value, repairs: [...repairs, ...cleaned.repairs] }
  }
  return { ok: false, error: `not valid JSON: ${lastError}` }
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

/** Contents of ``` fenced blocks, JSON-labelled ones first. */
function fencedBlocks(text: string): string[] {
  const labelled: string[] = []
  const other: string[] = []
  const pattern = /```([A-Za-z0-9_-]*)[^\S\n]*\n?([\s\S]*?)```/g
  for (const match of text.matchAll(pattern)) {
    const label = (match[1] ?? '').toLowerCase()
    const content = match[2] ?? ''
    if (label === 'json' || label === 'jsonc' || label === 'json5') labelled.push(content)
    else other.push(content)
  }
  // An unterminated opening fence (the closing one was cut off or forgotten).
  if (labelled.length === 0 && other.length === 0) {
    const open = /```[A-Za-z0-9_-]*[^\S\n]*\n([\s\S]*)$/.exec(text)
    if (open?.[1]) other.push(open[1])
  }
  return [...labelled, ...other]
}

/** Index of the bracket closing the one at `start`, honouring strings; -1 when unbalanced. */
function matchingClose(text: string, start: number): number {
  const stack: string[] = []
  let inString = false
  let escaped = false
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!
    if (inString) {
      if (escaped) escaped = false
      else if (ch === '\\') escaped = true
      else if (ch === '"') inString = false
      continue
    }
    if (ch === '"') inString = true
    else if (ch === '{' || ch === '[') stack.push(ch === '{' ? '}' : ']')
    else if (ch === '}' || ch === ']') {
      if (stack.pop() !== ch) return -1
      if (stack.length === 0) return i
    }
  }
  return -1
}

/** Drop comments and trailing commas outside strings (repeated: a comment may hide a trailing comma). */
function cleanOutsideStrings(text: string): { text: string; repairs: JsonRepair[] } {
  const repairs = new Set<JsonRepair>()
  let current = text
  for (let pass = 0; pass < 3; pass++) {
    const next = cleanPass(current)
    if (next.repairs.length === 0) break
    for (const repair of next.repairs) repairs.add(repair)
    current = next.text
  }
  return { text: current, repairs: [...repairs] }
}

function cleanPass(text: string): { text: string; repairs: JsonRepair[] } {
  let out = ''
  const repairs = new Set<JsonRepair>()
  let inString = false
  let escaped = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (inString) {
      out += ch
      if (escaped) escaped = false
      else if (ch === '\\') escaped = true
      else if (ch === '"') inString = false
      continue
    }
    if (ch === '"') {
      inString = true
      out += ch
      continue
    }
    if (ch === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i)
      i = end < 0 ? text.length : end - 1
      repairs.add('comment')
      continue
    }
    if (ch === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2)
      if (end < 0) return { text, repairs: [] }
      i = end + 1
      repairs.add('comment')
      continue
    }
    if (ch === ',') {
      let j = i + 1
      while (j < text.length && /\s/.test(text[j]!)) j++
      if (text[j] === '}' || text[j] === ']') {
        repairs.add('trailing-comma')
        continue
      }
    }
    out += ch
  }
  return { text: out, repairs: [...repairs] }
}
